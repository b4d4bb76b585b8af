package flinkdoctor.lab;

import java.util.Map;

import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.util.Collector;

/**
 * The state/restore scenarios' job (flinkdoctor lab, helper "state"): sequence source -> throttle ->
 * keyBy -> keyed counter -> discarding sink, like LabJob, but with the knobs a restore depends on.
 * The keyed state is registered in open(OpenContext) (Flink 1.19+ and 2.x), so a restore problem
 * surfaces when the task starts, as in a real job.
 *
 * --rate N              records per second (0 = as fast as possible)
 * --keys N              number of distinct keys
 * --payload B           bytes of keyed state per key (makes the savepoint's keyed state a file of
 *                       its own instead of bytes inlined in _metadata)
 * --max-parallelism N   env.setMaxParallelism(N) (-1 = leave it to Flink)
 * --count-type T        type of the keyed ValueState "count": long (Long) or string (String);
 *                       changing it between savepoint and restore is a real incompatible change
 */
public class StateJob {

    public static void main(String[] args) throws Exception {
        Map<String, String> a = LabJob.options(args);
        final long rate = Long.parseLong(a.getOrDefault("rate", "2000"));
        final long keys = Long.parseLong(a.getOrDefault("keys", "128"));
        final int payload = Integer.parseInt(a.getOrDefault("payload", "0"));
        final int maxParallelism = Integer.parseInt(a.getOrDefault("max-parallelism", "-1"));
        final String countType = a.getOrDefault("count-type", "long");
        String name = a.getOrDefault("name", "flinkdoctor-lab-state");

        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        if (maxParallelism > 0) {
            env.setMaxParallelism(maxParallelism);
        }
        env.fromSequence(0, Long.MAX_VALUE)
                .name("sequence")
                .uid("sequence")
                .map(LabJob.pace(rate))
                .name("records")
                .uid("records")
                .keyBy(new LabJob.ModKey(keys))
                .process(new KeyedCount(payload, "string".equals(countType)))
                .name("keyed-count")
                .uid("keyed-count")
                .sinkTo(new DiscardingSink<>())
                .name("discard")
                .uid("discard");
        env.execute(name);
    }



    /** Keyed counter whose "count" state is a Long or (after a code change) a String. */
    public static class KeyedCount extends KeyedProcessFunction<Long, Long, Long> {
        private final int payload;
        private final boolean countAsString;
        private transient ValueState<Long> count;
        private transient ValueState<String> countText;
        private transient ValueState<byte[]> blob;

        KeyedCount(int payload, boolean countAsString) {
            this.payload = payload;
            this.countAsString = countAsString;
        }

        @Override
        public void open(OpenContext ctx) throws Exception {
            if (countAsString) {
                countText = getRuntimeContext().getState(new ValueStateDescriptor<>("count", String.class));
            } else {
                count = getRuntimeContext().getState(new ValueStateDescriptor<>("count", Long.class));
            }
            blob = getRuntimeContext().getState(new ValueStateDescriptor<>("payload", byte[].class));
        }

        @Override
        public void processElement(Long value, Context ctx, Collector<Long> out) throws Exception {
            if (countAsString) {
                String c = countText.value();
                countText.update(Long.toString(c == null ? 1L : Long.parseLong(c) + 1));
            } else {
                Long c = count.value();
                count.update(c == null ? 1L : c + 1);
            }
            if (payload > 0 && blob.value() == null) {
                byte[] b = new byte[payload];
                for (int i = 0; i < b.length; i++) {
                    b[i] = (byte) (value + i);
                }
                blob.update(b);
            }
            out.collect(value);
        }
    }
}
