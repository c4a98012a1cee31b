// A Kafka Streams application on Apache Kafka's own kafka-streams, for the live tests: a stateful count (source
// topic -> count per key in an in-memory store, its changelog created by the broker -> sink topic) in a group on
// the streams rebalance protocol (KIP-1071, `group.protocol=streams`; `classic` as the 8th argument: the consumer
// group protocol with Streams' own assignor, follow-up rebalances included), its real client log written by log4j2 to the
// file the test ships. Compiled once per test run (`java_member.compiled_classes`) against kafka-streams' classpath.
// It prints one JSON line per state transition of the application (what `MemberProcess.wait_for` reads).
// SIGTERM closes it with LEAVE_GROUP (a clean shutdown: the member leaves the streams group); SIGKILL is a crash.
// It compiles against kafka-streams 3.0 too (a rolling upgrade's old instance): the 4.x close options are looked up
// at run time, and a kafka-streams without them closes as it always did, without leaving the group.
import java.lang.reflect.Method;
import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.state.Stores;

public class StreamsApp {
    private static void print(String json) {
        System.out.println(json);
        System.out.flush();
    }

    // streams.close(CloseOptions.groupMembershipOperation(LEAVE_GROUP).withTimeout(timeout)), kafka-streams 4.x
    @SuppressWarnings({"unchecked", "rawtypes"})
    private static void closeLeaving(KafkaStreams streams, Duration timeout) {
        Object leaving;
        Method close;
        try {
            Class<?> options = Class.forName("org.apache.kafka.streams.CloseOptions");
            Class operation = Class.forName("org.apache.kafka.streams.CloseOptions$GroupMembershipOperation");
            leaving = options.getMethod("groupMembershipOperation", operation)
                .invoke(null, Enum.valueOf(operation, "LEAVE_GROUP"));
            leaving = options.getMethod("withTimeout", Duration.class).invoke(leaving, timeout);
            close = KafkaStreams.class.getMethod("close", options);
        } catch (ReflectiveOperationException older) {
            streams.close(timeout);
            return;
        }
        try {
            close.invoke(streams, leaving);
        } catch (ReflectiveOperationException failed) {
            throw new IllegalStateException(failed);
        }
    }

    public static void main(String[] args) throws Exception {
        // bootstrap application-id client-id source-topic sink-topic state-dir run-s [group-protocol: streams]
        Properties settings = new Properties();
        settings.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        settings.put(StreamsConfig.APPLICATION_ID_CONFIG, args[1]);
        settings.put(StreamsConfig.CLIENT_ID_CONFIG, args[2]);
        String protocol = args.length > 7 ? args[7] : "streams";
        if (!protocol.equals("classic")) {  // StreamsConfig.GROUP_PROTOCOL_CONFIG, unknown before kafka-streams 4.x
            settings.put("group.protocol", protocol);
        }
        settings.put(StreamsConfig.STATE_DIR_CONFIG, args[5]);
        settings.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
        settings.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 500);
        settings.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        settings.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        settings.put(StreamsConfig.consumerPrefix("auto.offset.reset"), "earliest");

        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(args[3], Consumed.with(Serdes.String(), Serdes.String()))
            .groupByKey()
            .count(Materialized.as(Stores.inMemoryKeyValueStore("counts")))
            .toStream()
            .to(args[4], Produced.with(Serdes.String(), Serdes.Long()));

        KafkaStreams streams = new KafkaStreams(builder.build(), settings);
        streams.setStateListener((now, before) ->
            print("{\"state\": \"" + now + "\", \"" + now.name().toLowerCase() + "\": true, \"from\": \"" + before + "\"}"));
        CountDownLatch closed = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            // SIGTERM: a clean shutdown, the member leaves the group (a dynamic member's default is to stay)
            closeLeaving(streams, Duration.ofSeconds(15));
            closed.countDown();
        }));
        streams.start();
        Thread.sleep(Long.parseLong(args[6]) * 1000);
        print("{\"run_ended\": true}");
        System.exit(0);  // the shutdown hook closes it
    }
}
