package flinkdoctor.lab;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URL;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.streaming.api.functions.timestamps.AscendingTimestampExtractor;
import org.apache.flink.util.Collector;

/**
 * Faults in the user's own job code and its dependencies (scenarios/code.py). Every mode is a bug
 * as users write it; Flink's own checks and libraries produce the failure:
 *
 * --mode ok                 sequence -> pace -> keyBy -> count -> discard (a healthy first version)
 * --mode not-serializable   a map function keeps the team's own (non-Serializable) HTTP client in a
 *                           field; the client's closure check rejects the program at submission
 * --mode kryo               records are a non-POJO class (falls back to Kryo); every 5000th (a gift
 *                           bundle) holds a shared unmodifiable list, which Kryo cannot rebuild after
 *                           the keyBy network shuffle
 * --mode missing-driver     open() loads a JDBC driver class the fat jar does not bundle
 * --mode leak-thread        open() starts a static "settings reloader" thread that keeps using the
 *                           job's classloader (thread context classloader) after the job is gone
 * --mode stuck-sink         a sink retries an unreachable endpoint forever and swallows interrupts
 * --mode ascending          event timestamps assigned with AscendingTimestampExtractor, but every
 *                           --late-every-th record is --late-ms behind (out-of-order input)
 *
 * Uses only APIs present in Flink 1.20 and 2.x (open(OpenContext), no ParameterTool).
 */
public class CodeJob {

    public static void main(String[] args) throws Exception {
        Map<String, String> a = LabJob.options(args);
        String mode = a.getOrDefault("mode", "ok");
        long rate = Long.parseLong(a.getOrDefault("rate", "1000"));
        long keys = Long.parseLong(a.getOrDefault("keys", "64"));
        long lateEvery = Long.parseLong(a.getOrDefault("late-every", "200"));
        long lateMs = Long.parseLong(a.getOrDefault("late-ms", "5000"));
        String endpoint = a.getOrDefault("endpoint", "127.0.0.1:9");
        String name = a.getOrDefault("name", "flinkdoctor-lab-code");

        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        DataStream<Long> seq = env.fromSequence(0, Long.MAX_VALUE).name("sequence").uid("sequence")
                .map(LabJob.pace(rate)).name("records").uid("records");

        switch (mode) {
            case "ok":
                count(seq, keys);
                break;
            case "not-serializable":
                count(seq.map(new Enrich("http://127.0.0.1:9/enrich")).name("enrich").uid("enrich"), keys);
                break;
            case "kryo":
                seq.map(new ToOrder()).name("to-order").uid("to-order")
                        .keyBy(new OrderKey(keys))
                        .process(new OrderTotal()).name("order-total").uid("order-total")
                        .sinkTo(new DiscardingSink<>()).name("discard").uid("discard");
                break;
            case "missing-driver":
                count(seq.map(new JdbcLookup("com.mysql.cj.jdbc.Driver", "jdbc:mysql://db:3306/shop"))
                        .name("jdbc-lookup").uid("jdbc-lookup"), keys);
                break;
            case "leak-thread":
                count(seq.map(new ReloadingSettings()).name("settings").uid("settings"), keys);
                break;
            case "stuck-sink":
                count(seq, keys).map(new RetryForever(endpoint)).name("push").uid("push")
                        .sinkTo(new DiscardingSink<>()).name("discard-pushed").uid("discard-pushed");
                break;
            case "ascending":
                count(seq.map(new EventTime(lateEvery, lateMs)).name("event-time").uid("event-time")
                        .assignTimestampsAndWatermarks(new Ascending()).name("timestamps").uid("timestamps"), keys);
                break;
            default:
                throw new IllegalArgumentException("unknown --mode " + mode);
        }
        env.execute(name);
    }

    private static DataStream<Long> count(DataStream<Long> in, long keys) {
        DataStream<Long> out = in.keyBy(new LabJob.ModKey(keys)).process(new CountPerKey()).name("keyed-count").uid("keyed-count");
        out.sinkTo(new DiscardingSink<>()).name("discard").uid("discard");
        return out;
    }



    public static class CountPerKey extends KeyedProcessFunction<Long, Long, Long> {
        @Override
        public void processElement(Long value, Context ctx, Collector<Long> out) {
            out.collect(value);
        }
    }

    /** java-serialization: the lookup client is created in main() and kept in a field of the function. */
    public static class Enrich implements MapFunction<Long, Long> {
        private final PriceClient prices;

        Enrich(String url) {
            this.prices = new PriceClient(url, 2000);
        }

        @Override
        public Long map(Long value) throws Exception {
            return value + prices.price(value);
        }
    }

    /** The team's own small HTTP client: plain fields, but not Serializable. */
    public static class PriceClient {
        private final String baseUrl;
        private final int timeoutMs;

        PriceClient(String baseUrl, int timeoutMs) {
            this.baseUrl = baseUrl;
            this.timeoutMs = timeoutMs;
        }

        long price(long id) throws IOException {
            java.net.HttpURLConnection c =
                    (java.net.HttpURLConnection) new URL(baseUrl + "?id=" + id).openConnection();
            c.setConnectTimeout(timeoutMs);
            c.setReadTimeout(timeoutMs);
            try (InputStream in = c.getInputStream()) {
                return in.readAllBytes().length;
            } finally {
                c.disconnect();
            }
        }
    }

    /** kryo: no default constructor and final fields, so not a POJO: Flink falls back to Kryo. */
    public static class Order {
        private final long id;
        private final List<String> items;

        Order(long id, List<String> items) {
            this.id = id;
            this.items = items;
        }

        long id() {
            return id;
        }

        List<String> items() {
            return items;
        }
    }

    public static class ToOrder implements MapFunction<Long, Order> {
        /** the fixed content of a gift bundle, shared read-only by every bundle order */
        private static final List<String> BUNDLE =
                Collections.unmodifiableList(new ArrayList<>(List.of("sku-gift-box", "sku-card", "sku-ribbon")));

        @Override
        public Order map(Long value) {
            if (value % 5000 == 4999) {
                return new Order(value, BUNDLE);
            }
            List<String> items = new ArrayList<>();
            items.add("sku-" + (value % 97));
            items.add("sku-" + (value % 89));
            return new Order(value, items);
        }
    }

    public static class OrderKey implements KeySelector<Order, Long> {
        private final long keys;

        OrderKey(long keys) {
            this.keys = keys;
        }

        @Override
        public Long getKey(Order value) {
            return value.id() % keys;
        }
    }

    public static class OrderTotal extends KeyedProcessFunction<Long, Order, Long> {
        @Override
        public void processElement(Order value, Context ctx, Collector<Long> out) {
            out.collect((long) value.items().size());
        }
    }

    /** classpath: the JDBC driver is a runtime dependency the fat jar does not bundle. */
    public static class JdbcLookup extends RichMapFunction<Long, Long> {
        private final String driver;
        private final String url;

        JdbcLookup(String driver, String url) {
            this.driver = driver;
            this.url = url;
        }

        @Override
        public void open(OpenContext ctx) throws Exception {
            Class.forName(driver);
            java.sql.DriverManager.getConnection(url).close();
        }

        @Override
        public Long map(Long value) {
            return value;
        }
    }

    /** classloader leak: a static background thread, started once, never stopped in close(). */
    public static class ReloadingSettings extends RichMapFunction<Long, Long> {
        private static final AtomicBoolean STARTED = new AtomicBoolean();
        static volatile Properties settings = new Properties();

        @Override
        public void open(OpenContext ctx) {
            if (STARTED.compareAndSet(false, true)) {
                Thread t = new Thread(ReloadingSettings::reloadLoop, "settings-reloader");
                t.setDaemon(true);
                t.start();
            }
        }

        private static void reloadLoop() {
            while (true) {
                URL url = Thread.currentThread().getContextClassLoader().getResource("lab-settings.properties");
                if (url != null) {
                    Properties p = new Properties();
                    try (InputStream in = url.openStream()) {
                        p.load(in);
                        settings = p;
                    } catch (IOException e) {
                        // keep the old settings
                    }
                }
                try {
                    Thread.sleep(1000);
                } catch (InterruptedException e) {
                    return;
                }
            }
        }

        @Override
        public Long map(Long value) {
            return value;
        }
    }

    /** task-cancellation-stuck: retry until the endpoint answers, and never give up (interrupts swallowed). */
    public static class RetryForever implements MapFunction<Long, Long> {
        private final String endpoint;

        RetryForever(String endpoint) {
            this.endpoint = endpoint;
        }

        @Override
        public Long map(Long value) {
            String[] hp = endpoint.split(":");
            while (true) {
                try (Socket s = new Socket()) {
                    s.connect(new InetSocketAddress(hp[0], Integer.parseInt(hp[1])), 1000);
                    s.getOutputStream().write((value + "\n").getBytes());
                    return value;
                } catch (IOException e) {
                    // endpoint down: wait and retry
                }
                try {
                    Thread.sleep(500);
                } catch (InterruptedException e) {
                    // retry anyway: the record must not be lost
                }
            }
        }
    }

    /** watermark: the record value is its event time; every n-th record arrives lateMs late. */
    public static class EventTime implements MapFunction<Long, Long> {
        private final long every;
        private final long lateMs;

        EventTime(long every, long lateMs) {
            this.every = every;
            this.lateMs = lateMs;
        }

        @Override
        public Long map(Long value) {
            long now = System.currentTimeMillis();
            return value > 0 && value % every == 0 ? now - lateMs : now;
        }
    }

    public static class Ascending extends AscendingTimestampExtractor<Long> {
        @Override
        public long extractAscendingTimestamp(Long element) {
            return element;
        }
    }
}
