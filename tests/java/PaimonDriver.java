/*
 * A small driver of Paimon Java 1.0 (the reference implementation) for the interoperability
 * tests in tests/java_interop. One JVM runs a whole JSON script of steps on a filesystem
 * warehouse, so a test pays the JVM's start-up once per phase, not once per row or table.
 *
 *   java -cp <paimon-bundle.jar>:<classes> PaimonDriver <script.json> [<out.json>]
 *
 * Script: {"warehouse": "/abs/dir", "steps": [ {"op": ..., ...}, ... ]}
 * Output (to <out.json>, else stdout): {"results": [ one object per step ]}. A step that throws
 * yields {"error": "<class>: <message>"} and the script goes on with the next step (the stack
 * trace goes to stderr); only a malformed script or catalog failure exits non-zero. A step's
 * optional "label" is echoed in its result, to tell several steps of one table apart.
 *
 * Steps (every step names "table"; "db" defaults to "db"; "warehouse" overrides the script's):
 *   create    columns [[name, "SQL type"], ...], primary_keys, partition_keys, options
 *             Types: the atomic SQL types Paimon parses (INT, BIGINT NOT NULL, DECIMAL(10,2),
 *             TIMESTAMP(3), BYTES, ...) plus ARRAY<T>, MAP<K,V>, MULTISET<T>, ROW<a T, b U>.
 *   write     commits: [[row, ...], ...]: one BatchWriteBuilder commit per inner list; a row is
 *             an object by column name (absent = null) or an array by position; an optional
 *             "_kind" of "+I" / "-U" / "+U" / "-D". options: dynamic options (table.copy).
 *   generate  rows, commits, seed: Java's own writer commits `commits` commits of rows/commits
 *             rows of the benchmark shape (k BIGINT key, ts BIGINT, qty INT, price DOUBLE,
 *             category STRING of 40 values, note STRING), keys drawn from [0, 3/4 rows), so a
 *             quarter update earlier rows. The table must have those columns. Made in the JVM,
 *             not from JSON, so a table of a gigabyte is written in minutes (benches/merge).
 *   alter     changes: [{"add_column": name, "type": T}, {"set_option": key, "value": v},
 *             {"remove_option": key}, {"rename_column": [from, to]}, {"drop_column": name},
 *             {"update_column_type": [name, T]}]
 *   compact   Java's own full compaction of every partition and bucket (write-only forced
 *             off on a copy); unaware-bucket tables through UnawareAppendCompactionTask.
 *   read      every row, canonical JSON, sorted; options (e.g. scan.snapshot-id,
 *             scan.tag-name, or incremental-between "a,b" with incremental-between-scan-mode
 *             "changelog" for the changelog a snapshot wrote); with_kind adds "_kind".
 *   snapshots every snapshot (id, commitKind, schemaId, counts, indexManifest, ...)
 *   files     the live data files of the latest snapshot (partition, bucket, level, ...)
 *   tag       name, snapshot_id (default: the latest), time_retained (a duration: the tag's
 *             TTL, written as tagCreateTime / tagTimeRetained); "create_tag" is the same step.
 *   compact's "maintenance": false commits through a write-only copy of the table, so that
 *             Java's own post-commit maintenance (this build's order) does not run (nor its
 *             consumer expiry, which this build runs even on write-only commits).
 *
 * Maintenance steps (each on the table copied with its "options" and write-only off, as a
 * dedicated job runs; every count or list they return is Java's own):
 *   expire_snapshots   table.newExpireSnapshots().config(coreOptions().expireConfig()).expire()
 *   expire_changelogs  table.newExpireChangelog() with the same config
 *   expire_partitions  store().newPartitionExpire(user).expire(Long.MAX_VALUE), with
 *                      partition.expiration-check-interval forced to 0 (as the procedure does);
 *                      "expired": the dropped partitions
 *   expire_consumers   ConsumerManager.expire(now - consumer.expiration-time), if that is set
 *   tag_auto           store().newTagCreationManager().run(): auto creation, then TTL expiry
 *   maintain           the post-commit maintenance in newer Paimon's order (TableCommitImpl
 *                      .maintain): tag_auto, partitions (the table's own check interval, with
 *                      identifier Long.MAX_VALUE), consumers, snapshots, then changelogs when the
 *                      changelog lifecycle is decoupled. This 1.0 build's own commit runs them
 *                      as consumers, snapshots, partitions, tags instead.
 * State steps:
 *   list      snapshots (ids), earliest, latest, changelogs (ids), tags {name: snapshot id},
 *             partitions (of the latest snapshot: partition, recordCount, fileCount,
 *             lastFileCreationTime), consumers {id: nextSnapshot}
 *   orphans   new OrphanFilesClean(table).olderThan(older_than).fileCleaner(no-op).clean():
 *             the files Java would delete, relative to the table directory, sorted;
 *             older_than is "yyyy-MM-dd HH:mm:ss" in the JVM zone (default far in the future);
 *             "delete": true keeps Java's own cleaner (the files are deleted)
 *   versions  every row of every snapshot (scan.snapshot-id) and of every tag (scan.tag-name):
 *             {"snapshots": {id: rows | {"error": ...}}, "tags": {name: rows | {"error": ...}}}
 *
 * Any step may carry "timezone" (e.g. "GMT-12"): the JVM default zone during that step only
 * (Paimon stamps data files' creationTime with LocalDateTime.now(): a write in GMT-12 looks
 * twelve hours old to a reader in UTC).
 *
 * Canonical values: integers and floats as JSON numbers, strings as strings, DECIMAL as its
 * plain string ("12.30"), DATE as "yyyy-MM-dd", TIME as "HH:mm:ss[.SSS]", TIMESTAMP as
 * "yyyy-MM-ddTHH:mm:ss[.ffffff]" (Python's isoformat), BYTES as lower-case hex, ARRAY as a JSON
 * array, MAP as an array of [key, value] pairs sorted by the key's JSON, ROW as an object.
 */

import org.apache.paimon.CoreOptions;
import org.apache.paimon.append.UnawareAppendCompactionTask;
import org.apache.paimon.consumer.ConsumerManager;
import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.CatalogContext;
import org.apache.paimon.catalog.CatalogFactory;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.data.BinaryRow;
import org.apache.paimon.data.BinaryString;
import org.apache.paimon.data.Decimal;
import org.apache.paimon.data.GenericArray;
import org.apache.paimon.data.GenericMap;
import org.apache.paimon.data.GenericRow;
import org.apache.paimon.data.InternalArray;
import org.apache.paimon.data.InternalMap;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.data.Timestamp;
import org.apache.paimon.disk.IOManager;
import org.apache.paimon.io.DataFileMeta;
import org.apache.paimon.manifest.ManifestEntry;
import org.apache.paimon.manifest.PartitionEntry;
import org.apache.paimon.operation.AppendOnlyFileStoreWrite;
import org.apache.paimon.operation.OrphanFilesClean;
import org.apache.paimon.operation.PartitionExpire;
import org.apache.paimon.options.ExpireConfig;
import org.apache.paimon.options.Options;
import org.apache.paimon.reader.RecordReader;
import org.apache.paimon.schema.Schema;
import org.apache.paimon.schema.SchemaChange;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.JsonNodeFactory;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.paimon.table.BucketMode;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.Table;
import org.apache.paimon.table.sink.BatchTableCommit;
import org.apache.paimon.table.sink.BatchTableWrite;
import org.apache.paimon.table.sink.BatchWriteBuilder;
import org.apache.paimon.table.sink.CommitMessage;
import org.apache.paimon.table.source.ReadBuilder;
import org.apache.paimon.table.source.Split;
import org.apache.paimon.types.ArrayType;
import org.apache.paimon.types.DataField;
import org.apache.paimon.types.DataType;
import org.apache.paimon.types.DataTypeJsonParser;
import org.apache.paimon.types.DataTypes;
import org.apache.paimon.types.DecimalType;
import org.apache.paimon.types.MapType;
import org.apache.paimon.types.MultisetType;
import org.apache.paimon.types.RowKind;
import org.apache.paimon.types.RowType;
import org.apache.paimon.utils.TimeUtils;
import org.apache.paimon.Changelog;
import org.apache.paimon.Snapshot;

import java.io.File;
import java.io.PrintStream;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.time.Duration;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SortedMap;
import java.util.TimeZone;
import java.util.UUID;

public class PaimonDriver {

    /** Data files the last `read` planned (after its filter pruned files). */
    private static int lastPlannedFiles;

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final JsonNodeFactory NODES = JsonNodeFactory.instance;
    private static final DateTimeFormatter SECONDS =
            DateTimeFormatter.ofPattern("uuuu-MM-dd'T'HH:mm:ss");

    private final Catalog catalog;
    private final IOManager ioManager;

    private PaimonDriver(Catalog catalog, IOManager ioManager) {
        this.catalog = catalog;
        this.ioManager = ioManager;
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 1 || args.length > 2) {
            System.err.println("usage: PaimonDriver <script.json> [<out.json>]");
            System.exit(2);
        }
        // Paimon and Hadoop may log to stdout: keep stdout for our JSON only.
        PrintStream stdout = System.out;
        System.setOut(System.err);
        JsonNode script = JSON.readTree(new File(args[0]));
        String warehouse = new File(script.get("warehouse").asText()).getAbsolutePath();
        Options options = new Options();
        options.set("warehouse", "file://" + warehouse);
        options.set("cache-enabled", "false");
        Path ioDir = Files.createTempDirectory("paimon-driver-io");
        ArrayNode results = NODES.arrayNode();
        Map<String, PaimonDriver> drivers = new HashMap<>();
        try (Catalog catalog = CatalogFactory.createCatalog(CatalogContext.create(options));
                IOManager io = IOManager.create(ioDir.toString())) {
            drivers.put(warehouse, new PaimonDriver(catalog, io));
            for (JsonNode step : script.get("steps")) {
                String where = step.has("warehouse")
                        ? new File(step.get("warehouse").asText()).getAbsolutePath() : warehouse;
                PaimonDriver driver = drivers.computeIfAbsent(where, w -> open(w, io));
                ObjectNode result = NODES.objectNode();
                result.put("op", step.path("op").asText());
                result.put("table", step.path("table").asText());
                if (step.has("label")) {
                    result.put("label", step.get("label").asText());
                }
                long start = System.nanoTime();
                TimeZone zone = TimeZone.getDefault();
                try {
                    if (step.has("timezone")) {
                        TimeZone.setDefault(TimeZone.getTimeZone(step.get("timezone").asText()));
                    }
                    driver.run(step, result);
                } catch (Throwable t) {
                    System.err.println("step failed: " + step);
                    t.printStackTrace();
                    result.put("error", describe(t));
                } finally {
                    TimeZone.setDefault(zone);
                }
                result.put("millis", (System.nanoTime() - start) / 1_000_000);
                results.add(result);
            }
        } finally {
            for (Map.Entry<String, PaimonDriver> d : drivers.entrySet()) {
                if (!d.getKey().equals(warehouse)) {
                    d.getValue().catalog.close();
                }
            }
            deleteTree(ioDir.toFile());
        }
        ObjectNode out = NODES.objectNode();
        out.set("results", results);
        String text = JSON.writeValueAsString(out);
        if (args.length == 2) {
            Files.write(new File(args[1]).toPath(), text.getBytes(StandardCharsets.UTF_8));
        } else {
            stdout.println(text);
            stdout.flush();
        }
        // Paimon's writers may leave non-daemon threads behind.
        System.exit(0);
    }

    /** A catalog on another warehouse (a step's own "warehouse"). */
    private static PaimonDriver open(String warehouse, IOManager io) {
        Options options = new Options();
        options.set("warehouse", "file://" + warehouse);
        options.set("cache-enabled", "false");
        return new PaimonDriver(CatalogFactory.createCatalog(CatalogContext.create(options)), io);
    }

    private static String describe(Throwable t) {
        StringBuilder sb = new StringBuilder();
        for (Throwable c = t; c != null; c = c.getCause() == c ? null : c.getCause()) {
            if (sb.length() > 0) {
                sb.append(" | caused by: ");
            }
            sb.append(c.getClass().getName()).append(": ").append(c.getMessage());
        }
        return sb.toString();
    }

    private static void deleteTree(File f) {
        File[] children = f.listFiles();
        if (children != null) {
            for (File c : children) {
                deleteTree(c);
            }
        }
        f.delete();
    }

    private void run(JsonNode step, ObjectNode result) throws Exception {
        String op = step.path("op").asText();
        Identifier id = Identifier.create(step.path("db").asText("db"), step.get("table").asText());
        switch (op) {
            case "create":
                create(id, step);
                break;
            case "write":
                write(id, step, result);
                break;
            case "generate":
                generate(id, step, result);
                break;
            case "alter":
                alter(id, step);
                break;
            case "compact":
                result.setAll(compact(id, step));
                break;
            case "read":
                result.set("rows", read(id, step));
                // The data files the filtered scan planned: what file indexes and statistics
                // let Java skip shows here.
                result.put("planned_files", lastPlannedFiles);
                break;
            case "snapshots":
                result.set("snapshots", snapshots(id));
                break;
            case "files":
                result.set("files", files(id));
                break;
            case "tag":
            case "create_tag":
                tag(id, step);
                break;
            case "expire_snapshots":
                result.put("expired", expireSnapshots(id, step));
                break;
            case "expire_changelogs":
                result.put("expired", expireChangelogs(id, step));
                break;
            case "expire_partitions":
                result.set("expired", expirePartitions(id, step));
                break;
            case "expire_consumers":
                result.put("ran", expireConsumers(maintenanceTable(id, step)));
                break;
            case "tag_auto":
                maintenanceTable(id, step).store().newTagCreationManager().run();
                break;
            case "maintain":
                result.setAll(maintain(id, step));
                break;
            case "list":
                result.setAll(list(id));
                break;
            case "orphans":
                result.set("orphans", orphans(id, step));
                break;
            case "versions":
                result.setAll(versions(id));
                break;
            default:
                throw new IllegalArgumentException("unknown op '" + op + "'");
        }
    }

    // ---------------------------------------------------------------- steps

    private void create(Identifier id, JsonNode step) throws Exception {
        catalog.createDatabase(id.getDatabaseName(), true);
        Schema.Builder schema = Schema.newBuilder();
        for (JsonNode col : step.get("columns")) {
            schema.column(col.get(0).asText(), parseType(col.get(1).asText()));
        }
        schema.primaryKey(strings(step.get("primary_keys")));
        schema.partitionKeys(strings(step.get("partition_keys")));
        schema.options(stringMap(step.get("options")));
        catalog.createTable(id, schema.build(), false);
    }

    /**
     * Commits each of the step's "commits" (arrays of rows). Optional: "pause_ms" between
     * commits (a writer committing every so often while a compaction job runs), and "attempts":
     * a commit that fails (a conflict with a concurrent compaction) is written and committed
     * again from scratch, up to that many times; the failed attempts and their first messages
     * are reported. "stop_file": the writer stops after the commit that finds this file exists
     * (a racing writer that outlasts however long the other side takes); "commits" in the
     * result says how many it made.
     */
    private void write(Identifier id, JsonNode step, ObjectNode result) throws Exception {
        Table table = catalog.getTable(id);
        Map<String, String> dynamic = stringMap(step.get("options"));
        if (!dynamic.isEmpty()) {
            table = table.copy(dynamic);
        }
        RowType rowType = table.rowType();
        long pauseMs = step.path("pause_ms").asLong(0);
        int attempts = Math.max(1, step.path("attempts").asInt(1));
        File stopFile = step.has("stop_file") ? new File(step.get("stop_file").asText()) : null;
        int commits = 0;
        int failed = 0;
        ArrayNode failures = NODES.arrayNode();
        for (JsonNode commit : step.get("commits")) {
            for (int attempt = 1; ; attempt++) {
                BatchWriteBuilder builder = table.newBatchWriteBuilder();
                try (BatchTableWrite write = builder.newWrite();
                        BatchTableCommit tableCommit = builder.newCommit()) {
                    write.withIOManager(ioManager);
                    for (JsonNode row : commit) {
                        write.write(toRow(row, rowType));
                    }
                    tableCommit.commit(write.prepareCommit());
                    break;
                } catch (Exception e) {
                    if (attempt >= attempts) {
                        throw e;
                    }
                    failed++;
                    if (failures.size() < 5) {
                        failures.add(describe(e));
                    }
                }
            }
            commits++;
            if (stopFile != null && stopFile.exists()) {
                break;
            }
            if (pauseMs > 0) {
                Thread.sleep(pauseMs);
            }
        }
        result.put("commits", commits);
        result.put("failed_attempts", failed);
        result.set("failures", failures);
    }

    /** The `generate` step (see the header): rows made here, written by Java's own writer. */
    private void generate(Identifier id, JsonNode step, ObjectNode result) throws Exception {
        Table table = catalog.getTable(id);
        long rows = step.get("rows").asLong();
        int commits = Math.max(1, step.path("commits").asInt(10));
        java.util.SplittableRandom rng = new java.util.SplittableRandom(step.path("seed").asLong(11));
        long perCommit = rows / commits;
        long keys = Math.max(1, rows * 3 / 4);
        BinaryString[] categories = new BinaryString[40];
        for (int i = 0; i < categories.length; i++) {
            categories[i] = BinaryString.fromString(String.format("category-%02d", i));
        }
        long written = 0;
        for (int c = 0; c < commits; c++) {
            BatchWriteBuilder builder = table.newBatchWriteBuilder();
            try (BatchTableWrite write = builder.newWrite();
                    BatchTableCommit tableCommit = builder.newCommit()) {
                write.withIOManager(ioManager);
                for (long i = 0; i < perCommit; i++) {
                    long k = rng.nextLong(keys);
                    write.write(GenericRow.of(k, k * 10 + c, rng.nextInt(100),
                            Math.round(rng.nextDouble() * 100000) / 100.0,
                            categories[rng.nextInt(categories.length)],
                            BinaryString.fromString(String.format("note-%d-%012d", c, k))));
                }
                tableCommit.commit(write.prepareCommit());
            }
            written += perCommit;
        }
        result.put("rows", written);
        result.put("commits", commits);
    }

    private void alter(Identifier id, JsonNode step) throws Exception {
        List<SchemaChange> changes = new ArrayList<>();
        for (JsonNode c : step.get("changes")) {
            if (c.has("add_column")) {
                changes.add(SchemaChange.addColumn(c.get("add_column").asText(), parseType(c.get("type").asText())));
            } else if (c.has("set_option")) {
                changes.add(SchemaChange.setOption(c.get("set_option").asText(), c.get("value").asText()));
            } else if (c.has("remove_option")) {
                changes.add(SchemaChange.removeOption(c.get("remove_option").asText()));
            } else if (c.has("rename_column")) {
                changes.add(SchemaChange.renameColumn(c.get("rename_column").get(0).asText(),
                        c.get("rename_column").get(1).asText()));
            } else if (c.has("drop_column")) {
                changes.add(SchemaChange.dropColumn(c.get("drop_column").asText()));
            } else if (c.has("update_column_type")) {
                changes.add(SchemaChange.updateColumnType(c.get("update_column_type").get(0).asText(),
                        parseType(c.get("update_column_type").get(1).asText())));
            } else {
                throw new IllegalArgumentException("unknown schema change " + c);
            }
        }
        catalog.alterTable(id, changes, false);
    }

    /** Java's own full compaction of every partition and bucket, committed as one snapshot. */
    private ObjectNode compact(Identifier id, JsonNode step) throws Exception {
        Map<String, String> dynamic = new HashMap<>(stringMap(step.get("options")));
        dynamic.put("write-only", "false");
        FileStoreTable table = ((FileStoreTable) catalog.getTable(id)).copy(dynamic);
        // Without maintenance: commit through a write-only copy (no post-commit maintainers).
        FileStoreTable committer = table;
        if (!step.path("maintenance").asBoolean(true)) {
            Map<String, String> writeOnly = new HashMap<>(dynamic);
            writeOnly.put("write-only", "true");
            // This build expires consumers after every commit, write-only or not.
            if (table.coreOptions().consumerExpireTime() != null) {
                writeOnly.put("consumer.expiration-time", "36500 d");
            }
            committer = ((FileStoreTable) catalog.getTable(id)).copy(writeOnly);
        }
        List<ManifestEntry> entries = table.store().newScan().plan().files();
        List<CommitMessage> messages = new ArrayList<>();
        ObjectNode out = NODES.objectNode();
        out.put("files_before", entries.size());
        out.put("bucket_mode", table.bucketMode().name());
        if (table.bucketMode() == BucketMode.BUCKET_UNAWARE) {
            Map<BinaryRow, List<DataFileMeta>> byPartition = new LinkedHashMap<>();
            for (ManifestEntry e : entries) {
                byPartition.computeIfAbsent(e.partition(), k -> new ArrayList<>()).add(e.file());
            }
            String user = UUID.randomUUID().toString();
            for (Map.Entry<BinaryRow, List<DataFileMeta>> e : byPartition.entrySet()) {
                if (e.getValue().size() < 2) {
                    continue;
                }
                AppendOnlyFileStoreWrite write = (AppendOnlyFileStoreWrite) table.store().newWrite(user);
                try {
                    messages.add(new UnawareAppendCompactionTask(e.getKey(), e.getValue())
                            .doCompact(table, write));
                } finally {
                    write.close();
                }
            }
            out.put("tasks", messages.size());
            if (!messages.isEmpty()) {
                try (BatchTableCommit commit = committer.newBatchWriteBuilder().newCommit()) {
                    commit.commit(messages);
                }
            }
        } else {
            Set<List<Object>> buckets = new LinkedHashSet<>();
            for (ManifestEntry e : entries) {
                List<Object> key = new ArrayList<>();
                key.add(e.partition());
                key.add(e.bucket());
                buckets.add(key);
            }
            BatchWriteBuilder builder = table.newBatchWriteBuilder();
            try (BatchTableWrite write = builder.newWrite();
                    BatchTableCommit commit = committer.newBatchWriteBuilder().newCommit()) {
                write.withIOManager(ioManager);
                for (List<Object> b : buckets) {
                    write.compact((BinaryRow) b.get(0), (Integer) b.get(1), true);
                }
                commit.commit(write.prepareCommit());
            }
            out.put("tasks", buckets.size());
        }
        return out;
    }

    private ArrayNode read(Identifier id, JsonNode step) throws Exception {
        Table table = catalog.getTable(id);
        Map<String, String> dynamic = stringMap(step.get("options"));
        if (!dynamic.isEmpty()) {
            table = table.copy(dynamic);
        }
        boolean withKind = step.path("with_kind").asBoolean(false);
        RowType rowType = table.rowType();
        ReadBuilder rb = table.newReadBuilder();
        // {"filter": {"field": f, "op": "eq" | "ge" | "lt", "value": v}}: the scan prunes files by
        // their value statistics with it; the rows are filtered exactly afterwards, so a file
        // pruned by a wrong bound shows as missing rows.
        JsonNode filter = step.get("filter");
        java.util.function.Predicate<InternalRow> keep = r -> true;
        if (filter != null) {
            int index = rowType.getFieldIndex(filter.get("field").asText());
            DataType type = rowType.getTypeAt(index);
            Object literal = toInternal(filter.get("value"), type);
            org.apache.paimon.predicate.PredicateBuilder pb =
                    new org.apache.paimon.predicate.PredicateBuilder(rowType);
            String op = filter.get("op").asText();
            boolean ge = op.equals("ge");
            boolean eq = op.equals("eq");
            rb = rb.withFilter(eq ? pb.equal(index, literal)
                    : ge ? pb.greaterOrEqual(index, literal) : pb.lessThan(index, literal));
            InternalRow.FieldGetter getter = InternalRow.createFieldGetter(type, index);
            @SuppressWarnings("unchecked")
            Comparable<Object> bound = (Comparable<Object>) literal;
            keep = r -> {
                Object v = getter.getFieldOrNull(r);
                if (v == null) {
                    return false;
                }
                int c = -bound.compareTo(v);
                return eq ? c == 0 : ge ? c >= 0 : c < 0;
            };
        }
        final java.util.function.Predicate<InternalRow> kept = keep;
        List<Split> splits = rb.newScan().plan().splits();
        lastPlannedFiles = 0;
        for (Split split : splits) {
            if (split instanceof org.apache.paimon.table.source.DataSplit) {
                lastPlannedFiles += ((org.apache.paimon.table.source.DataSplit) split).dataFiles().size();
            }
        }
        List<String> rows = new ArrayList<>();
        try (RecordReader<InternalRow> reader = rb.newRead().withIOManager(ioManager).createReader(splits)) {
            reader.forEachRemaining(row -> {
                if (!kept.test(row)) {
                    return;
                }
                ObjectNode o = rowToJson(row, rowType);
                if (withKind) {
                    o.put("_kind", row.getRowKind().shortString());
                }
                try {
                    rows.add(JSON.writeValueAsString(o));
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            });
        }
        rows.sort(Comparator.naturalOrder());
        ArrayNode out = NODES.arrayNode();
        for (String r : rows) {
            out.add(JSON.readTree(r));
        }
        return out;
    }

    private ArrayNode snapshots(Identifier id) throws Exception {
        FileStoreTable table = (FileStoreTable) catalog.getTable(id);
        ArrayNode out = NODES.arrayNode();
        Iterator<Snapshot> it = table.snapshotManager().snapshots();
        while (it.hasNext()) {
            Snapshot s = it.next();
            ObjectNode o = NODES.objectNode();
            o.put("id", s.id());
            o.put("commitKind", s.commitKind().name());
            o.put("schemaId", s.schemaId());
            o.put("totalRecordCount", s.totalRecordCount());
            o.put("deltaRecordCount", s.deltaRecordCount());
            o.put("changelogRecordCount", s.changelogRecordCount());
            o.put("changelogManifestList", s.changelogManifestList());
            o.put("indexManifest", s.indexManifest());
            out.add(o);
        }
        return out;
    }

    private ArrayNode files(Identifier id) throws Exception {
        FileStoreTable table = (FileStoreTable) catalog.getTable(id);
        RowType partitionType = table.schema().logicalPartitionType();
        ArrayNode out = NODES.arrayNode();
        for (ManifestEntry e : table.store().newScan().plan().files()) {
            ObjectNode o = NODES.objectNode();
            o.set("partition", rowToJson(e.partition(), partitionType));
            o.put("bucket", e.bucket());
            o.put("level", e.level());
            o.put("file", e.file().fileName());
            o.put("rowCount", e.file().rowCount());
            o.put("schemaId", e.file().schemaId());
            o.put("fileSource", e.file().fileSource().map(Enum::name).orElse(null));
            byte[] index = e.file().embeddedIndex();
            o.put("embeddedIndexBytes", index == null ? 0 : index.length);
            if (index != null) {
                o.put("embeddedIndex", java.util.Base64.getEncoder().encodeToString(index));
            }
            o.put("extraFiles", e.file().extraFiles().size());
            out.add(o);
        }
        return out;
    }

    // ---------------------------------------------------------------- maintenance

    private void tag(Identifier id, JsonNode step) throws Exception {
        Table table = catalog.getTable(id);
        String name = step.get("name").asText();
        Duration ttl = step.has("time_retained")
                ? TimeUtils.parseDuration(step.get("time_retained").asText()) : null;
        if (step.has("snapshot_id")) {
            long snapshot = step.get("snapshot_id").asLong();
            if (ttl != null) {
                table.createTag(name, snapshot, ttl);
            } else {
                table.createTag(name, snapshot);
            }
        } else if (ttl != null) {
            table.createTag(name, ttl);
        } else {
            table.createTag(name);
        }
    }

    /** The table as a dedicated maintenance job sees it: its options, write-only off. */
    private FileStoreTable maintenanceTable(Identifier id, JsonNode step) throws Exception {
        Map<String, String> dynamic = new HashMap<>(stringMap(step.get("options")));
        dynamic.put("write-only", "false");
        return ((FileStoreTable) catalog.getTable(id)).copy(dynamic);
    }

    private int expireSnapshots(Identifier id, JsonNode step) throws Exception {
        FileStoreTable table = maintenanceTable(id, step);
        return table.newExpireSnapshots().config(table.coreOptions().expireConfig()).expire();
    }

    private int expireChangelogs(Identifier id, JsonNode step) throws Exception {
        FileStoreTable table = maintenanceTable(id, step);
        return table.newExpireChangelog().config(table.coreOptions().expireConfig()).expire();
    }

    private static ArrayNode partitionMaps(List<Map<String, String>> partitions) {
        ArrayNode out = NODES.arrayNode();
        if (partitions != null) {
            for (Map<String, String> p : partitions) {
                ObjectNode o = NODES.objectNode();
                p.forEach(o::put);
                out.add(o);
            }
        }
        return out;
    }

    private ArrayNode expirePartitions(Identifier id, JsonNode step) throws Exception {
        Map<String, String> dynamic = new HashMap<>(stringMap(step.get("options")));
        dynamic.put("write-only", "false");
        dynamic.put("partition.expiration-check-interval", "0 s");
        FileStoreTable table = ((FileStoreTable) catalog.getTable(id)).copy(dynamic);
        PartitionExpire expire = table.store().newPartitionExpire("expire-partitions-" + UUID.randomUUID());
        if (expire == null) {
            throw new IllegalStateException("no partition expiration for " + id
                    + " (partition.expiration-time unset, or the table is not partitioned)");
        }
        return partitionMaps(expire.expire(Long.MAX_VALUE));
    }

    private static boolean expireConsumers(FileStoreTable table) {
        Duration expiration = table.coreOptions().consumerExpireTime();
        if (expiration == null) {
            return false;
        }
        new ConsumerManager(table.fileIO(), table.location())
                .expire(LocalDateTime.now().minus(expiration));
        return true;
    }

    /** Post-commit maintenance in newer Paimon's order (TableCommitImpl.maintain). */
    private ObjectNode maintain(Identifier id, JsonNode step) throws Exception {
        FileStoreTable table = maintenanceTable(id, step);
        CoreOptions options = table.coreOptions();
        ObjectNode out = NODES.objectNode();
        table.store().newTagCreationManager().run();
        PartitionExpire partitions = table.store().newPartitionExpire("maintain-" + UUID.randomUUID());
        if (partitions != null) {
            out.set("partitions", partitionMaps(partitions.expire(Long.MAX_VALUE)));
        }
        out.put("consumers", expireConsumers(table));
        ExpireConfig config = options.expireConfig();
        out.put("snapshots", table.newExpireSnapshots().config(config).expire());
        if (options.changelogLifecycleDecoupled()) {
            out.put("changelogs", table.newExpireChangelog().config(config).expire());
        }
        return out;
    }

    private ObjectNode list(Identifier id) throws Exception {
        FileStoreTable table = (FileStoreTable) catalog.getTable(id);
        ObjectNode out = NODES.objectNode();
        ArrayNode snapshots = NODES.arrayNode();
        Iterator<Snapshot> it = table.snapshotManager().snapshots();
        while (it.hasNext()) {
            snapshots.add(it.next().id());
        }
        out.set("snapshots", snapshots);
        Long earliest = table.snapshotManager().earliestSnapshotId();
        Long latest = table.snapshotManager().latestSnapshotId();
        out.set("earliest", earliest == null ? NODES.nullNode() : NODES.numberNode(earliest));
        out.set("latest", latest == null ? NODES.nullNode() : NODES.numberNode(latest));
        ArrayNode changelogs = NODES.arrayNode();
        Iterator<Changelog> cl = table.snapshotManager().changelogs();
        while (cl.hasNext()) {
            changelogs.add(cl.next().id());
        }
        out.set("changelogs", changelogs);
        ObjectNode tags = NODES.objectNode();
        SortedMap<Snapshot, List<String>> tagged = table.tagManager().tags();
        for (Map.Entry<Snapshot, List<String>> e : tagged.entrySet()) {
            for (String name : e.getValue()) {
                tags.put(name, e.getKey().id());
            }
        }
        out.set("tags", tags);
        ArrayNode partitions = NODES.arrayNode();
        RowType partitionType = table.schema().logicalPartitionType();
        if (latest != null) {
            List<String> rows = new ArrayList<>();
            for (PartitionEntry p : table.store().newScan().readPartitionEntries()) {
                ObjectNode o = NODES.objectNode();
                o.set("partition", rowToJson(p.partition(), partitionType));
                o.put("recordCount", p.recordCount());
                o.put("fileCount", p.fileCount());
                o.put("lastFileCreationTime", p.lastFileCreationTime());
                rows.add(JSON.writeValueAsString(o));
            }
            rows.sort(Comparator.naturalOrder());
            for (String r : rows) {
                partitions.add(JSON.readTree(r));
            }
        }
        out.set("partitions", partitions);
        ObjectNode consumers = NODES.objectNode();
        new ConsumerManager(table.fileIO(), table.location()).consumers().forEach(consumers::put);
        out.set("consumers", consumers);
        return out;
    }

    private ArrayNode orphans(Identifier id, JsonNode step) throws Exception {
        FileStoreTable table = (FileStoreTable) catalog.getTable(id);
        String olderThan = step.path("older_than").asText("2999-12-31 00:00:00");
        OrphanFilesClean clean = new OrphanFilesClean(table).olderThan(olderThan);
        widenOrphanCleanPool(clean);
        if (!step.path("delete").asBoolean(false)) {
            clean.fileCleaner(p -> { });
        }
        List<org.apache.paimon.fs.Path> found = clean.clean();
        String root = table.location().toUri().getPath();
        if (!root.endsWith("/")) {
            root = root + "/";
        }
        List<String> names = new ArrayList<>();
        for (org.apache.paimon.fs.Path p : found) {
            String path = p.toUri().getPath();
            names.add(path.startsWith(root) ? path.substring(root.length()) : path);
        }
        names.sort(Comparator.naturalOrder());
        ArrayNode out = NODES.arrayNode();
        names.forEach(out::add);
        return out;
    }

    /**
     * OrphanFilesClean of this build lists partition directories recursively on a pool of #CPU
     * threads whose tasks wait for the tasks they submit: on a 2-core machine a table with
     * partitions deadlocks. Widen that pool (the cleaner's own object, by reflection).
     */
    private static void widenOrphanCleanPool(OrphanFilesClean clean) throws Exception {
        java.lang.reflect.Field f = OrphanFilesClean.class.getDeclaredField("executor");
        f.setAccessible(true);
        java.util.concurrent.ThreadPoolExecutor pool =
                (java.util.concurrent.ThreadPoolExecutor) f.get(clean);
        if (pool.getMaximumPoolSize() < 64) {
            pool.setMaximumPoolSize(64);
            pool.setCorePoolSize(64);
        }
    }

    /** Every row of every snapshot and of every tag (time travel), or why it cannot be read. */
    private ObjectNode versions(Identifier id) throws Exception {
        FileStoreTable table = (FileStoreTable) catalog.getTable(id);
        ObjectNode snapshots = NODES.objectNode();
        List<Long> ids = new ArrayList<>();
        Iterator<Snapshot> it = table.snapshotManager().snapshots();
        while (it.hasNext()) {
            ids.add(it.next().id());
        }
        for (long s : ids) {
            snapshots.set(Long.toString(s), readOrError(id, "scan.snapshot-id", Long.toString(s)));
        }
        ObjectNode tags = NODES.objectNode();
        for (String name : table.tagManager().allTagNames()) {
            tags.set(name, readOrError(id, "scan.tag-name", name));
        }
        ObjectNode out = NODES.objectNode();
        out.set("snapshots", snapshots);
        out.set("tags", tags);
        return out;
    }

    private JsonNode readOrError(Identifier id, String key, String value) {
        ObjectNode step = NODES.objectNode();
        step.putObject("options").put(key, value);
        try {
            return read(id, step);
        } catch (Throwable t) {
            ObjectNode e = NODES.objectNode();
            e.put("error", describe(t));
            return e;
        }
    }

    // ---------------------------------------------------------------- values in

    private static GenericRow toRow(JsonNode json, RowType type) {
        List<DataField> fields = type.getFields();
        RowKind kind = RowKind.INSERT;
        Object[] values = new Object[fields.size()];
        if (json.isArray()) {
            if (json.size() != fields.size()) {
                throw new IllegalArgumentException("row " + json + " has " + json.size()
                        + " values, the type " + fields.size());
            }
            for (int i = 0; i < fields.size(); i++) {
                values[i] = toInternal(json.get(i), fields.get(i).type());
            }
        } else {
            Set<String> known = new LinkedHashSet<>();
            for (int i = 0; i < fields.size(); i++) {
                known.add(fields.get(i).name());
                values[i] = toInternal(json.get(fields.get(i).name()), fields.get(i).type());
            }
            Iterator<String> names = json.fieldNames();
            while (names.hasNext()) {
                String n = names.next();
                if (n.equals("_kind")) {
                    kind = RowKind.fromShortString(json.get(n).asText());
                } else if (!known.contains(n)) {
                    throw new IllegalArgumentException("unknown column '" + n + "' in " + json);
                }
            }
        }
        return GenericRow.ofKind(kind, values);
    }

    private static Object toInternal(JsonNode v, DataType type) {
        if (v == null || v.isNull()) {
            return null;
        }
        switch (type.getTypeRoot()) {
            case BOOLEAN:
                return v.asBoolean();
            case TINYINT:
                return (byte) v.asInt();
            case SMALLINT:
                return (short) v.asInt();
            case INTEGER:
                return v.asInt();
            case BIGINT:
                return v.asLong();
            case FLOAT:
                return (float) v.asDouble();
            case DOUBLE:
                return v.asDouble();
            case CHAR:
            case VARCHAR:
                return BinaryString.fromString(v.asText());
            case BINARY:
            case VARBINARY:
                return unhex(v.asText());
            case DECIMAL: {
                DecimalType d = (DecimalType) type;
                Decimal dec = Decimal.fromBigDecimal(new BigDecimal(v.asText()), d.getPrecision(), d.getScale());
                if (dec == null) {
                    throw new IllegalArgumentException(v + " does not fit " + type);
                }
                return dec;
            }
            case DATE:
                return v.isNumber() ? v.asInt() : (int) LocalDate.parse(v.asText()).toEpochDay();
            case TIME_WITHOUT_TIME_ZONE:
                return v.isNumber() ? v.asInt() : (int) (LocalTime.parse(v.asText()).toNanoOfDay() / 1_000_000);
            case TIMESTAMP_WITHOUT_TIME_ZONE:
            case TIMESTAMP_WITH_LOCAL_TIME_ZONE:
                return v.isNumber() ? Timestamp.fromEpochMillis(v.asLong())
                        : Timestamp.fromLocalDateTime(LocalDateTime.parse(v.asText()));
            case ARRAY: {
                DataType element = ((ArrayType) type).getElementType();
                Object[] items = new Object[v.size()];
                for (int i = 0; i < v.size(); i++) {
                    items[i] = toInternal(v.get(i), element);
                }
                return new GenericArray(items);
            }
            case MULTISET: {
                DataType element = ((MultisetType) type).getElementType();
                Map<Object, Object> m = new LinkedHashMap<>();
                Iterator<Map.Entry<String, JsonNode>> it = v.fields();
                while (it.hasNext()) {
                    Map.Entry<String, JsonNode> e = it.next();
                    m.put(toInternal(NODES.textNode(e.getKey()), element), e.getValue().asInt());
                }
                return new GenericMap(m);
            }
            case MAP: {
                MapType mt = (MapType) type;
                Map<Object, Object> m = new LinkedHashMap<>();
                if (v.isObject()) {
                    Iterator<Map.Entry<String, JsonNode>> it = v.fields();
                    while (it.hasNext()) {
                        Map.Entry<String, JsonNode> e = it.next();
                        m.put(toInternal(keyNode(e.getKey(), mt.getKeyType()), mt.getKeyType()),
                                toInternal(e.getValue(), mt.getValueType()));
                    }
                } else {
                    for (JsonNode pair : v) {
                        m.put(toInternal(pair.get(0), mt.getKeyType()), toInternal(pair.get(1), mt.getValueType()));
                    }
                }
                return new GenericMap(m);
            }
            case ROW:
                return toRow(v, (RowType) type);
            default:
                throw new UnsupportedOperationException("no JSON conversion for " + type);
        }
    }

    /** A JSON object's key (always a string) as the node of the map's key type. */
    private static JsonNode keyNode(String key, DataType keyType) {
        switch (keyType.getTypeRoot()) {
            case TINYINT:
            case SMALLINT:
            case INTEGER:
            case BIGINT:
                return NODES.numberNode(Long.parseLong(key));
            case FLOAT:
            case DOUBLE:
                return NODES.numberNode(Double.parseDouble(key));
            case BOOLEAN:
                return NODES.booleanNode(Boolean.parseBoolean(key));
            default:
                return NODES.textNode(key);
        }
    }

    private static byte[] unhex(String s) {
        if (s.length() % 2 != 0) {
            throw new IllegalArgumentException("odd hex string '" + s + "'");
        }
        byte[] out = new byte[s.length() / 2];
        for (int i = 0; i < out.length; i++) {
            out[i] = (byte) Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
        }
        return out;
    }

    // ---------------------------------------------------------------- values out

    private static ObjectNode rowToJson(InternalRow row, RowType type) {
        ObjectNode o = NODES.objectNode();
        List<DataField> fields = type.getFields();
        for (int i = 0; i < fields.size(); i++) {
            DataType t = fields.get(i).type();
            Object v = InternalRow.createFieldGetter(t, i).getFieldOrNull(row);
            o.set(fields.get(i).name(), toJson(v, t));
        }
        return o;
    }

    private static JsonNode toJson(Object v, DataType type) {
        if (v == null) {
            return NODES.nullNode();
        }
        switch (type.getTypeRoot()) {
            case BOOLEAN:
                return NODES.booleanNode((Boolean) v);
            case TINYINT:
            case SMALLINT:
            case INTEGER:
                return NODES.numberNode(((Number) v).intValue());
            case BIGINT:
                return NODES.numberNode(((Number) v).longValue());
            case FLOAT:
                return NODES.numberNode((Float) v);
            case DOUBLE:
                return NODES.numberNode((Double) v);
            case CHAR:
            case VARCHAR:
                return NODES.textNode(v.toString());
            case BINARY:
            case VARBINARY: {
                StringBuilder sb = new StringBuilder();
                for (byte b : (byte[]) v) {
                    sb.append(String.format("%02x", b & 0xff));
                }
                return NODES.textNode(sb.toString());
            }
            case DECIMAL:
                return NODES.textNode(((Decimal) v).toBigDecimal().toPlainString());
            case DATE:
                return NODES.textNode(LocalDate.ofEpochDay((Integer) v).toString());
            case TIME_WITHOUT_TIME_ZONE:
                return NODES.textNode(LocalTime.ofNanoOfDay(((Integer) v) * 1_000_000L).toString());
            case TIMESTAMP_WITHOUT_TIME_ZONE:
            case TIMESTAMP_WITH_LOCAL_TIME_ZONE:
                return NODES.textNode(isoTimestamp(((Timestamp) v).toLocalDateTime()));
            case ARRAY: {
                DataType element = ((ArrayType) type).getElementType();
                InternalArray a = (InternalArray) v;
                InternalArray.ElementGetter getter = InternalArray.createElementGetter(element);
                ArrayNode out = NODES.arrayNode();
                for (int i = 0; i < a.size(); i++) {
                    out.add(toJson(getter.getElementOrNull(a, i), element));
                }
                return out;
            }
            case MAP:
            case MULTISET: {
                DataType keyType;
                DataType valueType;
                if (type instanceof MapType) {
                    keyType = ((MapType) type).getKeyType();
                    valueType = ((MapType) type).getValueType();
                } else {
                    keyType = ((MultisetType) type).getElementType();
                    valueType = DataTypes.INT();
                }
                InternalMap m = (InternalMap) v;
                InternalArray.ElementGetter kg = InternalArray.createElementGetter(keyType);
                InternalArray.ElementGetter vg = InternalArray.createElementGetter(valueType);
                List<ArrayNode> pairs = new ArrayList<>();
                for (int i = 0; i < m.size(); i++) {
                    ArrayNode pair = NODES.arrayNode();
                    pair.add(toJson(kg.getElementOrNull(m.keyArray(), i), keyType));
                    pair.add(toJson(vg.getElementOrNull(m.valueArray(), i), valueType));
                    pairs.add(pair);
                }
                pairs.sort(Comparator.comparing(p -> p.get(0).toString()));
                ArrayNode out = NODES.arrayNode();
                pairs.forEach(out::add);
                return out;
            }
            case ROW:
                return rowToJson((InternalRow) v, (RowType) type);
            default:
                throw new UnsupportedOperationException("no JSON conversion for " + type);
        }
    }

    /** Python's datetime.isoformat(): seconds, then microseconds when there are any. */
    private static String isoTimestamp(LocalDateTime t) {
        String s = t.format(SECONDS);
        int nanos = t.getNano();
        if (nanos == 0) {
            return s;
        }
        return nanos % 1000 == 0 ? s + String.format(".%06d", nanos / 1000) : s + String.format(".%09d", nanos);
    }

    // ---------------------------------------------------------------- types

    /** Paimon SQL type strings, nested types included (the atomic ones are Paimon's parser's). */
    static DataType parseType(String text) {
        TypeParser p = new TypeParser(text);
        DataType t = p.type();
        p.skipSpaces();
        if (p.pos != text.length()) {
            throw new IllegalArgumentException("trailing text in type '" + text + "' at " + p.pos);
        }
        return t;
    }

    private static final class TypeParser {
        final String s;
        int pos;

        TypeParser(String s) {
            this.s = s;
        }

        void skipSpaces() {
            while (pos < s.length() && Character.isWhitespace(s.charAt(pos))) {
                pos++;
            }
        }

        void expect(char c) {
            skipSpaces();
            if (pos >= s.length() || s.charAt(pos) != c) {
                throw new IllegalArgumentException("expected '" + c + "' at " + pos + " in '" + s + "'");
            }
            pos++;
        }

        String word() {
            skipSpaces();
            int start = pos;
            if (pos < s.length() && s.charAt(pos) == '`') {
                int end = s.indexOf('`', pos + 1);
                pos = end + 1;
                return s.substring(start + 1, end);
            }
            while (pos < s.length() && (Character.isLetterOrDigit(s.charAt(pos)) || s.charAt(pos) == '_')) {
                pos++;
            }
            return s.substring(start, pos);
        }

        DataType type() {
            skipSpaces();
            int start = pos;
            String head = word().toUpperCase();
            DataType t;
            switch (head) {
                case "ARRAY":
                    expect('<');
                    t = DataTypes.ARRAY(type());
                    expect('>');
                    break;
                case "MULTISET":
                    expect('<');
                    t = DataTypes.MULTISET(type());
                    expect('>');
                    break;
                case "MAP": {
                    expect('<');
                    DataType k = type();
                    expect(',');
                    DataType v = type();
                    expect('>');
                    t = DataTypes.MAP(k, v);
                    break;
                }
                case "ROW": {
                    expect('<');
                    RowType.Builder b = RowType.builder();
                    while (true) {
                        String name = word();
                        skipSpaces();
                        if (pos < s.length() && s.charAt(pos) == ':') {
                            pos++;
                        }
                        b.field(name, type());
                        skipSpaces();
                        if (pos < s.length() && s.charAt(pos) == ',') {
                            pos++;
                            continue;
                        }
                        break;
                    }
                    expect('>');
                    t = b.build();
                    break;
                }
                default: {
                    // An atomic type: everything up to the next ',' or '>' outside parentheses.
                    pos = start;
                    int depth = 0;
                    while (pos < s.length()) {
                        char c = s.charAt(pos);
                        if (c == '(') {
                            depth++;
                        } else if (c == ')') {
                            depth--;
                        } else if (depth == 0 && (c == ',' || c == '>')) {
                            break;
                        }
                        pos++;
                    }
                    return DataTypeJsonParser.parseAtomicTypeSQLString(s.substring(start, pos).trim());
                }
            }
            // Nullability of a nested type.
            skipSpaces();
            int save = pos;
            String next = word().toUpperCase();
            if (next.equals("NOT")) {
                if (!word().toUpperCase().equals("NULL")) {
                    throw new IllegalArgumentException("expected NULL after NOT in '" + s + "'");
                }
                return t.copy(false);
            } else if (next.equals("NULL")) {
                return t.copy(true);
            }
            pos = save;
            return t;
        }
    }

    // ---------------------------------------------------------------- JSON helpers

    private static List<String> strings(JsonNode n) {
        List<String> out = new ArrayList<>();
        if (n != null) {
            n.forEach(x -> out.add(x.asText()));
        }
        return out;
    }

    private static Map<String, String> stringMap(JsonNode n) {
        Map<String, String> out = new LinkedHashMap<>();
        if (n != null) {
            Iterator<Map.Entry<String, JsonNode>> it = n.fields();
            while (it.hasNext()) {
                Map.Entry<String, JsonNode> e = it.next();
                out.put(e.getKey(), e.getValue().asText());
            }
        }
        return out;
    }
}
