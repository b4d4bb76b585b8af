package flinkdoctor.lab;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.util.Collector;

/**
 * The one job behind every lab scenario: sequence source -> throttle/fault map -> keyBy -> keyed
 * counter -> discarding sink. Arguments pick the fault; checkpointing, state backend, restart
 * strategy and timeouts come from the cluster's config.yaml so the bundle shows them.
 *
 * Uses only APIs present in Flink 1.20 and 2.x (no open(Configuration), no ParameterTool).
 *
 * --rate N         records per second out of the throttle (0 = as fast as possible)
 * --keys N         number of distinct keys
 * --payload B      bytes of keyed state kept per key (state-over-memory-limit)
 * --sleep-ms N     sleep per record in the keyed operator (checkpoint-timeout: barriers queue)
 * --fail-after N   throw from user code at record N of every attempt (restart-exhausted)
 * --hoard B        keep B bytes per record on the heap forever (heap-oom)
 * --count-uid U    uid of the keyed operator; changing it between savepoint and restore makes the
 *                  saved state unmappable (incompatible-restore)
 * --direct B, --threads N, --classes N, --open-files N, --cache-entries N, --cache-max M
 *                  resource leaks of user code (see JvmLeaks); with any of them set, a "leaky-client"
 *                  map runs chained after "records"
 */
public class LabJob {

    public static void main(String[] args) throws Exception {
        Map<String, String> a = options(args);
        final long rate = Long.parseLong(a.getOrDefault("rate", "2000"));
        final long keys = Long.parseLong(a.getOrDefault("keys", "128"));
        final int payload = Integer.parseInt(a.getOrDefault("payload", "0"));
        final long sleepMs = Long.parseLong(a.getOrDefault("sleep-ms", "0"));
        final long failAfter = Long.parseLong(a.getOrDefault("fail-after", "-1"));
        final int hoard = Integer.parseInt(a.getOrDefault("hoard", "0"));
        String name = a.getOrDefault("name", "flinkdoctor-lab");
        String countUid = a.getOrDefault("count-uid", "keyed-count");
        JvmLeaks leaks = new JvmLeaks(
                Integer.parseInt(a.getOrDefault("direct", "0")),
                Integer.parseInt(a.getOrDefault("threads", "0")),
                Integer.parseInt(a.getOrDefault("classes", "0")),
                Integer.parseInt(a.getOrDefault("open-files", "0")),
                Integer.parseInt(a.getOrDefault("cache-entries", "0")),
                Long.parseLong(a.getOrDefault("cache-max", "0")));

        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        DataStream<Long> records = env.fromSequence(0, Long.MAX_VALUE)
                .name("sequence")
                .uid("sequence")
                .map(new Throttle(rate, failAfter, hoard))
                .name("records")
                .uid("records");
        if (leaks.active()) {
            records = records.map(leaks).name("leaky-client").uid("leaky-client");
        }
        records.keyBy(new ModKey(keys))
                .process(new Count(payload, sleepMs))
                .name("keyed-count")
                .uid(countUid)
                .sinkTo(new DiscardingSink<>())
                .name("discard")
                .uid("discard");
        env.execute(name);
    }

    /** Paces the source, and injects the user-code faults (exception, heap hoarding). */
    public static class Throttle implements MapFunction<Long, Long> {
        private final long rate;
        private final long failAfter;
        private final int hoard;
        private transient long seen;
        private transient long started;
        private transient List<byte[]> kept;

        Throttle(long rate, long failAfter, int hoard) {
            this.rate = rate;
            this.failAfter = failAfter;
            this.hoard = hoard;
        }

        @Override
        public Long map(Long value) throws Exception {
            if (started == 0) {
                started = System.currentTimeMillis();
                kept = new ArrayList<>();
            }
            seen++;
            if (failAfter >= 0 && seen > failAfter) {
                throw new IllegalStateException(
                        "Cannot process record " + value + " (flinkdoctor lab: user code fails on every attempt)");
            }
            if (hoard > 0) {
                kept.add(new byte[hoard]);
            }
            if (rate > 0) {
                long due = started + seen * 1000 / rate;
                long now = System.currentTimeMillis();
                if (due > now) {
                    Thread.sleep(due - now);
                }
            }
            return value;
        }
    }

    /** "--key value" pairs, as every lab job takes its arguments. */
    static Map<String, String> options(String[] args) {
        Map<String, String> a = new HashMap<>();
        for (int i = 0; i + 1 < args.length; i += 2) {
            a.put(args[i].replaceFirst("^--", ""), args[i + 1]);
        }
        return a;
    }

    /** Paces the source to `rate` records per second, nothing else (the other lab jobs use it too). */
    static Throttle pace(long rate) {
        return new Throttle(rate, -1, 0);
    }

    public static class ModKey implements KeySelector<Long, Long> {
        private final long keys;

        ModKey(long keys) {
            this.keys = keys;
        }

        @Override
        public Long getKey(Long value) {
            return value % keys;
        }
    }

    /** Keyed counter; optionally holds a payload per key and works slowly per record. */
    public static class Count extends KeyedProcessFunction<Long, Long, Long> {
        private final int payload;
        private final long sleepMs;
        private transient ValueState<Long> count;
        private transient ValueState<byte[]> blob;

        Count(int payload, long sleepMs) {
            this.payload = payload;
            this.sleepMs = sleepMs;
        }

        @Override
        public void processElement(Long value, Context ctx, Collector<Long> out) throws Exception {
            if (count == null) {
                count = getRuntimeContext().getState(new ValueStateDescriptor<>("count", Long.class));
                blob = getRuntimeContext().getState(new ValueStateDescriptor<>("payload", byte[].class));
            }
            Long c = count.value();
            count.update(c == null ? 1L : c + 1);
            if (payload > 0 && blob.value() == null) {
                byte[] b = new byte[payload];
                for (int i = 0; i < b.length; i++) {
                    b[i] = (byte) (value + i);
                }
                blob.update(b);
            }
            if (sleepMs > 0) {
                Thread.sleep(sleepMs);
            }
            out.collect(value);
        }
    }
}
