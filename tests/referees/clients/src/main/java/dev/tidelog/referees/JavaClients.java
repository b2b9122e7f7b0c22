package dev.tidelog.referees;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.Future;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Kafka's own Java clients against one bootstrap: an admin, an idempotent and a transactional
 * producer, and consumers of both group protocols. Each step prints one line "step key=value
 * ..." for the test that runs it to check; any failure is an exception and a non-zero exit.
 *
 * <p>Usage: JavaClients BOOTSTRAP TOPIC
 */
public final class JavaClients {
  private static final Duration WAIT = Duration.ofSeconds(60);

  private JavaClients() {}

  public static void main(String[] args) throws Exception {
    String bootstrap = args[0];
    String topic = args[1];
    admin(bootstrap, topic);
    Map<Integer, Long> idempotent = produceIdempotently(bootstrap, topic, 30);
    produceTransactionally(bootstrap, topic);
    consume(bootstrap, topic, "classic", 40);
    consume(bootstrap, topic, "consumer", 40);
    System.out.println("idempotent offsets=" + idempotent.size());
  }

  private static void admin(String bootstrap, String topic) throws Exception {
    Properties props = new Properties();
    props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    try (Admin admin = Admin.create(props)) {
      admin.createTopics(List.of(new NewTopic(topic, 3, (short) 1))).all().get();
      TopicDescription described =
          admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
      Collection<?> nodes = admin.describeCluster().nodes().get();
      Set<String> listed = admin.listTopics().names().get();
      ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
      Config config = admin.describeConfigs(List.of(resource)).all().get().get(resource);
      System.out.println(
          "admin partitions="
              + described.partitions().size()
              + " nodes="
              + nodes.size()
              + " listed="
              + listed.contains(topic)
              + " cleanup.policy="
              + config.get("cleanup.policy").value());
    }
  }

  private static Map<Integer, Long> produceIdempotently(String bootstrap, String topic, int count)
      throws Exception {
    Properties props = producerProps(bootstrap);
    props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
    props.put(ProducerConfig.ACKS_CONFIG, "all");
    Map<Integer, Long> last = new HashMap<>();
    try (KafkaProducer<String, String> producer = new KafkaProducer<>(props)) {
      List<Future<RecordMetadata>> sent = new ArrayList<>();
      for (int i = 0; i < count; i++) {
        sent.add(producer.send(new ProducerRecord<>(topic, "key-" + i, "idempotent-" + i)));
      }
      for (Future<RecordMetadata> future : sent) {
        RecordMetadata meta = future.get();
        last.merge(meta.partition(), meta.offset(), Math::max);
      }
    }
    System.out.println("idempotent sent=" + count + " partitions=" + last.size());
    return last;
  }

  private static void produceTransactionally(String bootstrap, String topic) throws Exception {
    Properties props = producerProps(bootstrap);
    props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "java-" + topic);
    try (KafkaProducer<String, String> producer = new KafkaProducer<>(props)) {
      producer.initTransactions();
      producer.beginTransaction();
      for (int i = 0; i < 10; i++) {
        producer.send(new ProducerRecord<>(topic, "txn-" + i, "committed-" + i));
      }
      producer.commitTransaction();
      producer.beginTransaction();
      for (int i = 0; i < 5; i++) {
        producer.send(new ProducerRecord<>(topic, "txn-" + i, "aborted-" + i));
      }
      producer.flush();
      producer.abortTransaction();
    }
    System.out.println("transactional committed=10 aborted=5");
  }

  private static void consume(String bootstrap, String topic, String protocol, int expected) {
    Properties props = new Properties();
    props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    props.put(ConsumerConfig.GROUP_ID_CONFIG, "java-" + protocol + "-" + topic);
    props.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol);
    props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    Set<String> values = new HashSet<>();
    int aborted = 0;
    try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(props)) {
      consumer.subscribe(List.of(topic));
      long deadline = System.nanoTime() + WAIT.toNanos();
      while (values.size() < expected && System.nanoTime() < deadline) {
        for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(500))) {
          values.add(record.value());
          if (record.value().startsWith("aborted-")) {
            aborted++;
          }
        }
      }
      consumer.commitSync();
      long committed =
          consumer.committed(consumer.assignment()).values().stream()
              .filter(o -> o != null)
              .mapToLong(o -> o.offset())
              .sum();
      System.out.println(
          "consume protocol="
              + protocol
              + " read="
              + values.size()
              + " aborted="
              + aborted
              + " committed="
              + committed);
    }
  }

  private static Properties producerProps(String bootstrap) {
    Properties props = new Properties();
    props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    return props;
  }
}
