package flinkdoctor.lab;

import java.util.Map;

import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.functions.Partitioner;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;

/**
 * The net helper's job: sequence source -> throttle -> partitionCustom (records routed by a user
 * partitioner, e.g. to pin hot customers to fixed subtasks) -> map -> discarding sink.
 * Checkpointing comes from the cluster's config.yaml, so a cluster configured with unaligned
 * checkpoints rejects this job at submission (custom partitioners are not supported there).
 *
 * Uses only APIs present in Flink 1.20 and 2.x (no open(Configuration), no ParameterTool).
 *
 * --rate N     records per second out of the throttle (0 = as fast as possible)
 * --routes N   number of routes the partitioner maps records to
 */
public class NetJob {

    public static void main(String[] args) throws Exception {
        Map<String, String> a = LabJob.options(args);
        final long rate = Long.parseLong(a.getOrDefault("rate", "1000"));
        final long routes = Long.parseLong(a.getOrDefault("routes", "16"));
        String name = a.getOrDefault("name", "flinkdoctor-lab-net");

        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.fromSequence(0, Long.MAX_VALUE)
                .name("sequence")
                .uid("sequence")
                .map(LabJob.pace(rate))
                .name("records")
                .uid("records")
                .partitionCustom(new RoutePartitioner(), new Route(routes))
                .map(new Pass())
                .name("routed")
                .uid("routed")
                .sinkTo(new DiscardingSink<>())
                .name("discard")
                .uid("discard");
        env.execute(name);
    }


    public static class Route implements KeySelector<Long, Long> {
        private final long routes;

        Route(long routes) {
            this.routes = routes;
        }

        @Override
        public Long getKey(Long value) {
            return value % routes;
        }
    }

    /** Route r goes to subtask r mod parallelism. */
    public static class RoutePartitioner implements Partitioner<Long> {
        @Override
        public int partition(Long route, int numPartitions) {
            return (int) (route % numPartitions);
        }
    }

    public static class Pass implements MapFunction<Long, Long> {
        @Override
        public Long map(Long value) {
            return value;
        }
    }
}
