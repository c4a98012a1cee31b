// A consumer-group member on Apache Kafka's own Java client, for the live tests: real Java-client log lines
// (log4j2, written to the file the test ships) and the group-coordinator traffic of kafka-clients, not librdkafka.
// Compiled once per test run (`java_member.compiled_classes`) against the embedded broker's classpath.
// It prints one JSON line per assignment, per refused commit and per hold (what `MemberProcess.wait_for` reads),
// polls every 100 ms, and commits its position every 300 ms synchronously, logging a refused commit as an
// application would.
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

public class JavaGroupMember {
    private static final Logger LOG = LoggerFactory.getLogger(JavaGroupMember.class);

    private static void print(String json) {
        System.out.println(json);
        System.out.flush();
    }

    private static String quoted(String text) {
        return "\"" + text.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }

    public static void main(String[] args) throws Exception {
        // bootstrap topic group client-id protocol(classic|consumer) session-timeout-ms run-s [name=value ...]:
        // stalls=AFTER_S,FOR_S,COUNT (after each of its first COUNT assignments, AFTER_S of polling, then FOR_S
        // without a poll, as a slow batch would); hold=PATH (while that file exists, the application holds between
        // a poll and its commit, as one busy with a batch: the test freezes it there, so that its first act once
        // thawed is the commit, not a poll that learns of the eviction); any other name=value is a consumer setting
        Path hold = null;
        int stallAfterMs = 0;
        int stallForMs = 0;
        int stallsLeft = 0;
        String topic = args[1];
        String protocol = args[4];
        Properties settings = new Properties();
        settings.put("bootstrap.servers", args[0]);
        settings.put("group.id", args[2]);
        settings.put("client.id", args[3]);
        settings.put("group.protocol", protocol);
        if (protocol.equals("classic")) {  // the consumer protocol's timeouts are the broker's (KIP-848)
            settings.put("session.timeout.ms", args[5]);
            settings.put("heartbeat.interval.ms", "500");
        }
        settings.put("enable.auto.commit", "false");
        settings.put("auto.offset.reset", "earliest");
        settings.put("key.deserializer", ByteArrayDeserializer.class.getName());
        settings.put("value.deserializer", ByteArrayDeserializer.class.getName());
        for (int i = 7; i < args.length; i++) {
            String[] pair = args[i].split("=", 2);
            if (pair[0].equals("hold")) {
                hold = Path.of(pair[1]);
            } else if (pair[0].equals("stalls")) {
                String[] stall = pair[1].split(",");
                stallAfterMs = (int) (Double.parseDouble(stall[0]) * 1000);
                stallForMs = (int) (Double.parseDouble(stall[1]) * 1000);
                stallsLeft = Integer.parseInt(stall[2]);
            } else {
                settings.put(pair[0], pair[1]);
            }
        }
        long runMs = Long.parseLong(args[6]) * 1000;
        long[] assignedAt = {0};
        KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(settings);
        CountDownLatch closed = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            consumer.wakeup();  // SIGTERM: leave the poll loop, close() (LeaveGroup unless static)
            try {
                closed.await();
            } catch (InterruptedException ignored) {
                Thread.currentThread().interrupt();
            }
        }));
        consumer.subscribe(List.of(topic), new ConsumerRebalanceListener() {
            @Override
            public void onPartitionsRevoked(java.util.Collection<TopicPartition> partitions) {}

            @Override
            public void onPartitionsAssigned(java.util.Collection<TopicPartition> partitions) {
                List<String> numbers = new ArrayList<>();
                for (TopicPartition partition : partitions) {
                    numbers.add(String.valueOf(partition.partition()));
                }
                if (!partitions.isEmpty()) {
                    assignedAt[0] = System.currentTimeMillis();
                }
                print("{\"assigned\": [" + String.join(", ", numbers) + "], \"member\": "
                    + quoted(consumer.groupMetadata().memberId()) + ", \"generation\": "
                    + consumer.groupMetadata().generationId() + "}");
            }
        });
        long end = System.currentTimeMillis() + runMs;
        long nextCommit = 0;
        try {
            while (System.currentTimeMillis() < end) {
                consumer.poll(Duration.ofMillis(100));
                if (stallsLeft > 0 && assignedAt[0] > 0 && System.currentTimeMillis() - assignedAt[0] >= stallAfterMs) {
                    stallsLeft -= 1;
                    assignedAt[0] = 0;
                    print("{\"stalling\": " + stallForMs + "}");
                    Thread.sleep(stallForMs);
                }
                if (hold != null && Files.exists(hold) && !consumer.assignment().isEmpty()) {
                    print("{\"holding\": " + quoted(hold.toString()) + "}");
                    while (Files.exists(hold)) {
                        Thread.sleep(20);
                    }
                    hold = null;  // once
                    nextCommit = 0;
                }
                if (System.currentTimeMillis() >= nextCommit && !consumer.assignment().isEmpty()) {
                    Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                    for (TopicPartition partition : consumer.assignment()) {  // what it has consumed: its position
                        offsets.put(partition, new OffsetAndMetadata(consumer.position(partition)));
                    }
                    try {
                        consumer.commitSync(offsets);
                    } catch (WakeupException stop) {
                        throw stop;
                    } catch (KafkaException refused) {
                        LOG.error("Commit of offsets {} failed", offsets, refused);
                        print("{\"commit_error\": " + quoted(refused.getClass().getSimpleName()) + "}");
                    }
                    nextCommit = System.currentTimeMillis() + 300;
                }
            }
        } catch (WakeupException stop) {
            // asked to stop
        } finally {
            consumer.close();
            closed.countDown();
        }
    }
}
