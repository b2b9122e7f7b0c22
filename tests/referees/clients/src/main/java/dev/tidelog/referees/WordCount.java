package dev.tidelog.referees;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.Function;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.LongDeserializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.CloseOptions;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;

/**
 * A Kafka Streams word count with exactly-once v2 and a state store, against one bootstrap. The
 * words are re-keyed (a repartition topic) and counted in a store (a changelog topic), each step
 * in one transaction across the output, the changelog, the repartition topic and the input's
 * offsets. Half the lines are counted by a first instance, which then stops; the rest are
 * produced while no instance runs, and a second instance with an empty state directory restores
 * the store from its changelog before it counts them. Any count over or under the lines' own is
 * a record processed twice or lost.
 *
 * <p>Prints the internal topics (without the application id) and the final counts, one line
 * each, the same against any broker that keeps Kafka's semantics.
 *
 * <p>Usage: WordCount BOOTSTRAP PREFIX
 */
public final class WordCount {
  private static final Duration WAIT = Duration.ofSeconds(90);
  private static final String STORE = "counts";
  private static final List<String> WORDS =
      List.of("tide", "log", "kafka", "stream", "table", "offset", "segment", "batch");

  private WordCount() {}

  public static void main(String[] args) throws Exception {
    String bootstrap = args[0];
    String prefix = args[1];
    String input = prefix + "-lines";
    String output = prefix + "-counts";
    String application = prefix + "-app";
    try (Admin admin = Admin.create(adminProps(bootstrap))) {
      admin
          .createTopics(List.of(new NewTopic(input, 3, (short) 1), new NewTopic(output, 3, (short) 1)))
          .all()
          .get();
    }
    List<String> lines = lines(400);
    List<String> first = lines.subList(0, 200);

    produce(bootstrap, input, first);
    runUntilCounted(bootstrap, application, input, output, count(first));
    produce(bootstrap, input, lines.subList(200, lines.size()));
    Map<String, Long> counted = runUntilCounted(bootstrap, application, input, output, count(lines));

    try (Admin admin = Admin.create(adminProps(bootstrap))) {
      for (String topic : new TreeSet<>(admin.listTopics().names().get())) {
        if (topic.startsWith(application)) {
          System.out.println("internal " + topic.substring(application.length()));
        }
      }
    }
    counted.forEach((word, n) -> System.out.println("count " + word + "=" + n));
  }

  /** Deterministic lines of one to five words, so both brokers see the same input. */
  private static List<String> lines(int n) {
    List<String> lines = new java.util.ArrayList<>();
    for (int i = 0; i < n; i++) {
      StringBuilder line = new StringBuilder();
      for (int w = 0; w <= i % 5; w++) {
        line.append(w == 0 ? "" : " ").append(WORDS.get((i * i + w * 3) % WORDS.size()));
      }
      lines.add(i % 3 == 0 ? line.toString().toUpperCase(Locale.ROOT) : line.toString());
    }
    return lines;
  }

  private static Map<String, Long> count(List<String> lines) {
    return lines.stream()
        .flatMap(line -> Arrays.stream(line.toLowerCase(Locale.ROOT).split(" ")))
        .collect(Collectors.groupingBy(Function.identity(), TreeMap::new, Collectors.counting()));
  }

  private static Topology topology(String input, String output) {
    StreamsBuilder builder = new StreamsBuilder();
    builder.<String, String>stream(input)
        .flatMapValues(line -> Arrays.asList(line.toLowerCase(Locale.ROOT).split(" ")))
        .groupBy((key, word) -> word, Grouped.with(STORE, Serdes.String(), Serdes.String()))
        .count(Materialized.as(STORE))
        .toStream()
        .to(output, Produced.with(Serdes.String(), Serdes.Long()));
    return builder.build();
  }

  /**
   * Runs one instance, with a state directory of its own, until the output topic's committed
   * counts are the expected ones; then closes it, leaving the group.
   */
  private static Map<String, Long> runUntilCounted(
      String bootstrap, String application, String input, String output, Map<String, Long> expected)
      throws Exception {
    Properties props = new Properties();
    props.put(StreamsConfig.APPLICATION_ID_CONFIG, application);
    props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
    props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 2);
    Path state = Files.createTempDirectory("wordcount-");
    props.put(StreamsConfig.STATE_DIR_CONFIG, state.toString());
    props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.String().getClass());
    props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.String().getClass());
    props.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
    try (KafkaStreams streams = new KafkaStreams(topology(input, output), props)) {
      streams.start();
      Map<String, Long> counted = readCounts(bootstrap, output, expected);
      streams.close(
          CloseOptions.groupMembershipOperation(CloseOptions.GroupMembershipOperation.LEAVE_GROUP)
              .withTimeout(WAIT));
      return counted;
    } finally {
      deleteTree(state);
    }
  }

  private static void deleteTree(Path root) throws IOException {
    try (Stream<Path> paths = Files.walk(root)) {
      for (Path path : paths.sorted(Comparator.reverseOrder()).toList()) {
        Files.delete(path);
      }
    }
  }

  /** The newest committed count of every word, once they are the expected counts. */
  private static Map<String, Long> readCounts(
      String bootstrap, String output, Map<String, Long> expected) {
    Properties props = new Properties();
    props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    Map<String, Long> counted = new TreeMap<>();
    try (KafkaConsumer<String, Long> consumer =
        new KafkaConsumer<>(props, new StringDeserializer(), new LongDeserializer())) {
      List<TopicPartition> partitions =
          consumer.partitionsFor(output).stream()
              .map(info -> new TopicPartition(output, info.partition()))
              .toList();
      consumer.assign(partitions);
      consumer.seekToBeginning(partitions);
      long deadline = System.nanoTime() + WAIT.toNanos();
      while (!counted.equals(expected)) {
        if (System.nanoTime() > deadline) {
          throw new IllegalStateException("counted " + counted + ", expected " + expected);
        }
        for (ConsumerRecord<String, Long> record : consumer.poll(Duration.ofMillis(200))) {
          counted.put(record.key(), record.value());
        }
        for (Map.Entry<String, Long> entry : counted.entrySet()) {
          Long want = expected.get(entry.getKey());
          if (want == null || entry.getValue() > want) {
            throw new IllegalStateException("counted twice: " + counted + ", expected " + expected);
          }
        }
      }
    }
    return counted;
  }

  private static void produce(String bootstrap, String topic, List<String> lines) throws Exception {
    Properties props = new Properties();
    props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
    try (KafkaProducer<String, String> producer =
        new KafkaProducer<>(props, new StringSerializer(), new StringSerializer())) {
      for (int i = 0; i < lines.size(); i++) {
        producer.send(new ProducerRecord<>(topic, "line-" + i, lines.get(i)));
      }
      producer.flush();
    }
  }

  private static Properties adminProps(String bootstrap) {
    Properties props = new Properties();
    props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    return props;
  }
}
