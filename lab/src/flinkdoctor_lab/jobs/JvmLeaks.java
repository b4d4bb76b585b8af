package flinkdoctor.lab;

import java.io.File;
import java.io.FileInputStream;
import java.io.FileWriter;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.locks.LockSupport;

import org.apache.flink.api.common.functions.MapFunction;
import org.codehaus.janino.SimpleCompiler;

/**
 * The resource leaks of user code that take a TaskManager's JVM or process limits down, one per flag
 * (LabJob chains this map after its throttle when any of them is set). Each is a bug seen in real
 * jobs: a client or executor created per record and never closed, a code generator whose compiled
 * classes are cached forever, an unbounded on-heap cache of small entries. Everything is kept in
 * fields of this instance, so a restarted task starts from nothing again (threads excepted: a
 * thread that never ends outlives its task, as in production).
 *
 * --direct B         allocate B bytes of direct memory per record and keep the buffer (jvm-direct-oom)
 * --threads N        start N threads per record that never end (jvm-native-thread-oom)
 * --classes N        compile N new classes per record with Janino, each in its own class loader, and keep
 *                    them (jvm-metaspace-oom)
 * --open-files N     open N file streams per record and never close them (too-many-open-files)
 * --cache-entries N  add N small objects per record to an on-heap cache (jvm-gc-pause) ...
 * --cache-max M      ... that holds up to M entries and then drops its oldest ones
 */
public class JvmLeaks implements MapFunction<Long, Long> {
    private final int direct;
    private final int threads;
    private final int classes;
    private final int openFiles;
    private final int cacheEntries;
    private final long cacheMax;

    private transient List<Object> kept;
    private transient File lookupFile;
    private transient ArrayDeque<Entry[]> cache;
    private transient Entry[] chunk;
    private transient int filled;
    private transient Entry newest;
    private transient long cached;

    public JvmLeaks(int direct, int threads, int classes, int openFiles, int cacheEntries, long cacheMax) {
        this.direct = direct;
        this.threads = threads;
        this.classes = classes;
        this.openFiles = openFiles;
        this.cacheEntries = cacheEntries;
        this.cacheMax = cacheMax;
    }

    public boolean active() {
        return direct > 0 || threads > 0 || classes > 0 || openFiles > 0 || cacheEntries > 0;
    }

    @Override
    public Long map(Long value) throws Exception {
        if (kept == null) {
            kept = new ArrayList<>();
        }
        if (direct > 0) {
            kept.add(ByteBuffer.allocateDirect(direct));
        }
        for (int i = 0; i < threads; i++) {
            Thread t = new Thread(JvmLeaks::waitForever, "lab-client-io-" + value + "-" + i);
            t.setDaemon(true);
            t.start();
        }
        for (int i = 0; i < classes; i++) {
            kept.add(compileRule(value, i));
        }
        for (int i = 0; i < openFiles; i++) {
            kept.add(openLookup());
        }
        for (int i = 0; i < cacheEntries; i++) {
            cache(value * cacheEntries + i);
        }
        return value;
    }

    private static void waitForever() {
        while (true) {
            LockSupport.park();
        }
    }

    /** A generated rule class, as a rule engine would compile one per expression it meets. */
    private static Class<?> compileRule(long value, int i) throws Exception {
        StringBuilder src = new StringBuilder("public class Rule").append(value).append('_').append(i)
                .append(" {\n");
        for (int m = 0; m < 40; m++) {
            src.append("  public static long check").append(m).append("(long x) { return x * ").append(m + value)
                    .append("L + \"rule-").append(value).append('-').append(m).append("\".length(); }\n");
        }
        src.append("}\n");
        SimpleCompiler compiler = new SimpleCompiler();
        compiler.setParentClassLoader(JvmLeaks.class.getClassLoader());
        compiler.cook(src.toString());
        return compiler.getClassLoader().loadClass("Rule" + value + "_" + i);
    }

    private InputStream openLookup() throws IOException {
        if (lookupFile == null) {
            lookupFile = File.createTempFile("lab-lookup-", ".csv");
            lookupFile.deleteOnExit();
            try (FileWriter w = new FileWriter(lookupFile)) {
                w.write("key,value\n1,one\n");
            }
        }
        return new FileInputStream(lookupFile);
    }

    private static final class Entry {
        final long key;
        Entry previous;

        Entry(long key, Entry previous) {
            this.key = key;
            this.previous = previous;
        }
    }

    /**
     * One chain of small entries, newest first (a history kept per key, say), indexed in chunks of 4096;
     * past cacheMax entries the oldest chunk is dropped and the chain cut there.
     */
    private void cache(long key) {
        if (cache == null) {
            cache = new ArrayDeque<>();
        }
        if (chunk == null || filled == chunk.length) {
            chunk = new Entry[4096];
            filled = 0;
            cache.addLast(chunk);
        }
        chunk[filled] = new Entry(key, newest);
        newest = chunk[filled];
        filled++;
        cached++;
        if (cacheMax > 0 && cached > cacheMax + chunk.length) {
            cached -= cache.removeFirst().length;
            cache.peekFirst()[0].previous = null;
        }
    }
}
