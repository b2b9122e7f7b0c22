// franz-go's own client tests (pkg/kgo) as a referee: `make referees` compiles them into
// .referees/franz-go/kgo.test, and tests/conformance/test_franz_go.py runs them against a real
// Kafka broker and against tidelog's agent.
module tidelog.dev/referees/franzgo

go 1.26.0

require github.com/twmb/franz-go v1.22.3
