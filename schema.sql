-- schema.sql -- the neuron-explorer-server store (SQLite).
--
-- Two layers:
--  * timeline tables (ours): interned strings, tracks, slices in packed
--    blocks clustered (track, lane, ts), counters, flows, LOD levels.
--    A window query touches O(pixels), not O(events).
--  * the vendor-named tables users already query (SystemProfileEvents,
--    DeviceProfileList, Instruction, DmaPacket, CpuUsage, ...), as tables
--    or as views over the timeline tables.
--
-- All times are int64 ns.  System tracks: Unix-epoch ns (hardware events
-- already mapped to the CPU clock).  Device tracks: ns on the device
-- timeline of their device profile; DeviceProfileList.time_offset_ns maps
-- them to the system timeline.

-- key/value facts about the store: schema_version, fingerprint, dir, state.
CREATE TABLE store_info (key TEXT PRIMARY KEY, value TEXT) WITHOUT ROWID;

-- Interned strings (event names, colour groups, labels).
CREATE TABLE str (id INTEGER PRIMARY KEY, s TEXT NOT NULL);

-- One row per base track: the finest row of events.  Grouping modes merge
-- base tracks into display tracks (their lanes stacked).
--   kind:   'slices' | 'counter'
--   domain: 'system' | 'device'
--   source: system slices: neuron_rt, neuron_hw, framework,
--           host_to_device_transfers, device_to_host_transfers;
--           system counters: neuron_hbm_usage, host_cpu_util, host_mem,
--           host_to_device_bandwidth, device_to_host_bandwidth;
--           device slices: engine, dma, cc;
--           device counters: semaphore, dma_throughput, sbuf, psum, mfu
--   label:  engine row (TensorMatrix ...), DMA queue name, semaphore id,
--           counter series name; NULL for system event tracks.
CREATE TABLE track (
  id INTEGER PRIMARY KEY,
  kind TEXT NOT NULL,
  domain TEXT NOT NULL,
  source TEXT NOT NULL,
  instance_id TEXT NOT NULL,
  pid INTEGER,
  tid INTEGER,
  nc_idx INTEGER,
  pcore_idx INTEGER,
  worker_gid INTEGER,
  stream_id INTEGER,
  device_idx INTEGER,
  hbm_idx INTEGER,
  cpu_id TEXT,
  device_profile_id INTEGER,
  label TEXT,
  lanes INTEGER NOT NULL DEFAULT 0,       -- slices: number of lanes
  max_dur INTEGER NOT NULL DEFAULT 0,
  event_count INTEGER NOT NULL DEFAULT 0, -- slices or counter samples
  first_ts INTEGER,
  last_ts INTEGER,                        -- max end
  lod_min_level INTEGER                   -- finest LOD level stored; NULL: none
);

-- Slices.  Within one (track, lane) slices never overlap.  id is the
-- event's own id (vendor id, or a generated one); name/grp are str ids (grp
-- picks the colour: framework op of an instruction, NULL otherwise); args is
-- a JSON object of every other attribute, or NULL.
--
-- They are stored in packed column blocks (doc/storage.md,
-- server/store/store_block.h): one slice_block row holds up to 256
-- slices of one (track, lane) in (ts, id) order, keyed by the first one's
-- ts and id.  `slice` is the read-only virtual table over them with the
-- columns below (module nex_slice: server/store/store_vtab.h; in the
-- sqlite3 shell, `.load nexstore` first).  A rowid table with the key in
-- an index: a WITHOUT ROWID table's seek reads the whole record (blobs
-- and all) of every cell it compares once the record overflows its page.
-- A block's args are a row of their own in slice_args (none when every
-- slice's args is NULL): records half the size pack the pages tighter,
-- and a reader of the other columns never reads their pages.  Args are
-- kept as argument sets: arg_set holds each set's template (the args
-- text with every value that varies replaced by a mark byte,
-- server/store/store_argset.h), a block the set of each slice and the
-- values that fill it.
CREATE TABLE slice_block (
  id INTEGER PRIMARY KEY,          -- the blocks in the order written
  track INTEGER NOT NULL,
  lane INTEGER NOT NULL,
  ts0 INTEGER NOT NULL,
  id0 INTEGER NOT NULL,
  n INTEGER NOT NULL,
  data BLOB NOT NULL               -- ts, dur, id, name, grp, args set, flows
);
CREATE TABLE slice_args (
  block INTEGER PRIMARY KEY,       -- slice_block.id
  args BLOB NOT NULL               -- the sets' values, zstd-compressed or not
);
CREATE TABLE arg_set (
  id INTEGER PRIMARY KEY,          -- 1, 2, ... in the order first written
  tpl BLOB NOT NULL                -- the template
);
CREATE UNIQUE INDEX slice_block_key ON slice_block (track, lane, ts0, id0);
-- slice(track, lane, ts, id, dur, name, grp, args)
CREATE VIRTUAL TABLE slice USING nex_slice;

-- Counter samples.  series 0 is the main value (HBM total_bytes, CPU
-- util_percent, host used_bytes, bandwidth bytes/s, semaphore value ...);
-- HBM rows carry series 1..22 for the categories, host memory series 1 is
-- used_percent.  seq numbers the samples of a track (the series of one
-- sample share it) and disambiguates equal timestamps.
--
-- Stored like the slices (doc/storage.md): one counter_block row holds up
-- to 64 samples of one (track, series) in (ts, seq) order, keyed by the
-- first one's ts and seq; `counter` is the read-only virtual table over
-- them (module nex_counter), rows in (track, series, ts, seq) order.
CREATE TABLE counter_block (
  id INTEGER PRIMARY KEY,
  track INTEGER NOT NULL,
  series INTEGER NOT NULL,
  ts0 INTEGER NOT NULL,
  seq0 INTEGER NOT NULL,
  n INTEGER NOT NULL,
  data BLOB NOT NULL               -- ts, seq, value
);
CREATE UNIQUE INDEX counter_block_key ON counter_block (track, series, ts0,
                                                        seq0);
-- counter(track, series, ts, seq, value REAL)
CREATE VIRTUAL TABLE counter USING nex_counter;

-- Names of counter series per track kind (source), e.g. neuron_hbm_usage:
-- 0 total_bytes, 1 generic_bytes ...
CREATE TABLE counter_series (
  source TEXT NOT NULL,
  series INTEGER NOT NULL,
  name TEXT NOT NULL,
  unit TEXT NOT NULL,
  PRIMARY KEY (source, series)
) WITHOUT ROWID;

-- Level of detail.  Level L groups by bucket = ts >> (6 + 2*L), i.e.
-- buckets of 64 * 4^L ns (L = 0..20).  A LOD row, per (track, level,
-- lane, bucket): ts = earliest start, end_ts = latest end of the slices
-- starting in the bucket, id/name/grp/dur of the longest one, count of
-- slices.  A row runs on over the following buckets while their slices
-- have its name and grp and follow with a gap under half a bucket.  The
-- rows of a (track, level, lane) are stored packed in blocks of up to 64
-- (server/lod.h: zigzag varint deltas); bucket is the block's first row's
-- bucket, n its rows, count the slices they stand for.
CREATE TABLE slice_lod (
  track INTEGER NOT NULL,
  level INTEGER NOT NULL,
  lane INTEGER NOT NULL,
  bucket INTEGER NOT NULL,
  n INTEGER NOT NULL,
  count INTEGER NOT NULL,
  rows BLOB NOT NULL,
  PRIMARY KEY (track, level, lane, bucket)
) WITHOUT ROWID;

CREATE TABLE counter_lod (
  track INTEGER NOT NULL,
  series INTEGER NOT NULL,
  level INTEGER NOT NULL,
  bucket INTEGER NOT NULL,
  ts INTEGER NOT NULL,            -- first sample in the bucket
  min REAL NOT NULL,
  max REAL NOT NULL,
  last REAL NOT NULL,
  count INTEGER NOT NULL,
  PRIMARY KEY (track, series, level, bucket)
) WITHOUT ROWID;

-- Flows: every slice that carries a flow id.  A dependency chain is the
-- set of slices sharing a flow id (framework -> neuron_rt -> neuron_hw).
-- Stored in packed blocks (doc/storage.md): one flow_block row holds up to
-- 64 endpoints in (flow_id, track, lane, ts, id) order, keyed by the first
-- one's flow id; `flow` is the read-only virtual table over them (module
-- nex_flow) with the columns below, rows in that order, a constraint on
-- flow_id a block seek.
CREATE TABLE flow_block (
  id INTEGER PRIMARY KEY,          -- the blocks in key order
  flow0 INTEGER NOT NULL,
  n INTEGER NOT NULL,
  data BLOB NOT NULL               -- flow_id, track, lane, ts, id
);
CREATE INDEX flow_block_key ON flow_block (flow0);
-- flow(flow_id, track, lane, ts, id)
CREATE VIRTUAL TABLE flow USING nex_flow;
-- The flows of a slice are kept in its block (the `flows` column of
-- slice, a JSON array) when the reader gives them with the slice.  This
-- table, keyed by slice, holds the others: those bound to a slice after it
-- was written (the Chrome traces' flow events), and again those of a slice
-- of two flows or more (so that "does an endpoint of this flow carry
-- another one" is one lookup here).  The flows of a slice are those of its
-- block and its rows here.
CREATE TABLE slice_flow (
  track INTEGER NOT NULL,
  lane INTEGER NOT NULL,
  ts INTEGER NOT NULL,
  id INTEGER NOT NULL,
  flow_id INTEGER NOT NULL,
  PRIMARY KEY (track, lane, ts, id, flow_id)
) WITHOUT ROWID;

-- Instruction dependencies: one row per entry of an instruction's
-- inst_dep_ids (seq: its position there).  (track, lane, ts, id) is the
-- dependent instruction; dep_id the instruction it waits for, as the trace
-- wrote it, and dep_track/dep_lane/dep_ts where that one lies in the same
-- device profile (NULL: the trace does not hold it).  Arrows go from dep to
-- the dependent.
--
-- Stored in packed blocks (doc/storage.md, server/store/store_block.h),
-- twice: inst_dep_block holds them seen from the dependents, up to 64 to a
-- row of one (track, lane) in (ts, id, seq) order; inst_dep_rev_block the
-- found ones again seen from the dependencies (track, lane and ts0 there
-- are the dependency's).  `inst_dep` and `inst_dep_rev` are the read-only
-- virtual tables over them (modules nex_inst_dep, nex_inst_dep_rev), with
-- the same columns: the first seeks track, lane, ts and id, the second
-- dep_track, dep_lane, dep_ts and dep_id (its rows have a dependency).
CREATE TABLE inst_dep_block (
  id INTEGER PRIMARY KEY,          -- the blocks of a (track, lane) in order
  track INTEGER NOT NULL,
  lane INTEGER NOT NULL,
  ts0 INTEGER NOT NULL,
  n INTEGER NOT NULL,
  data BLOB NOT NULL               -- ts, id, seq, the other's track, lane, ts, id
);
CREATE INDEX inst_dep_block_key ON inst_dep_block (track, lane, ts0);
CREATE TABLE inst_dep_rev_block (
  id INTEGER PRIMARY KEY,
  track INTEGER NOT NULL,
  lane INTEGER NOT NULL,
  ts0 INTEGER NOT NULL,
  n INTEGER NOT NULL,
  data BLOB NOT NULL
);
CREATE INDEX inst_dep_rev_block_key ON inst_dep_rev_block (track, lane, ts0);
-- inst_dep(track, ts, lane, id, seq, dep_id, dep_track, dep_lane, dep_ts)
CREATE VIRTUAL TABLE inst_dep USING nex_inst_dep;
CREATE VIRTUAL TABLE inst_dep_rev USING nex_inst_dep_rev;

-- Per (name, track) totals, for search counts and summaries.
CREATE TABLE name_stat (
  name INTEGER NOT NULL,
  track INTEGER NOT NULL,
  count INTEGER NOT NULL,
  total_dur INTEGER NOT NULL,
  PRIMARY KEY (name, track)
) WITHOUT ROWID;

-- Processes (thread names come from Chrome traces' metadata).  A Chrome
-- pid or tid given as text ("Spans") gets a small negative synthetic
-- number, named = 1 and the text as its name.
CREATE TABLE process (
  id INTEGER PRIMARY KEY,
  instance_id TEXT NOT NULL,
  pid INTEGER NOT NULL,
  name TEXT,                      -- process_name, rank, or folder name
  dir TEXT,                       -- folder relative to --dir
  labels TEXT,                    -- Chrome process_labels ("GPU 0")
  sort_index INTEGER,             -- Chrome process_sort_index
  named INTEGER NOT NULL DEFAULT 0,  -- 1: the trace gave the pid as text
  chrome INTEGER NOT NULL DEFAULT 0, -- 1: of a standalone Chrome trace
  UNIQUE (instance_id, pid)
);
CREATE TABLE thread (
  instance_id TEXT NOT NULL,
  pid INTEGER NOT NULL,
  tid INTEGER NOT NULL,
  name TEXT,
  sort_index INTEGER,             -- Chrome thread_sort_index
  named INTEGER NOT NULL DEFAULT 0,  -- 1: the trace gave the tid as text
  PRIMARY KEY (instance_id, pid, tid)
) WITHOUT ROWID;

-- One row per system profile (process folder with trace_info.pb).
CREATE TABLE SystemProfileMetadata (
  instance_id TEXT NOT NULL,
  process_id INTEGER NOT NULL,
  first_ts TEXT,
  last_ts TEXT,
  first_ts_ns TEXT,
  last_ts_ns TEXT,
  ntff_version INTEGER,
  hbm_capacity_bytes INTEGER,
  dropped_events INTEGER,
  stored_events INTEGER,
  instance_type TEXT,
  runtime_version TEXT,
  driver_version TEXT,
  dir TEXT
);

-- Device profiles (one per NTFF), and the executions they hold.
CREATE TABLE DeviceProfileList (
  id INTEGER PRIMARY KEY,
  device_profile_name TEXT NOT NULL,
  instance_id TEXT NOT NULL,
  process_id INTEGER NOT NULL,
  nc_id INTEGER NOT NULL,
  pcore_idx INTEGER,
  session_id INTEGER,             -- session mode
  model_id TEXT,                  -- model mode: the NEFF hash
  model_name TEXT,
  ntff_file TEXT NOT NULL,
  neff_file TEXT,
  time_offset_ns INTEGER,         -- device ts + offset = system ts (NULL: unknown)
  first_ts INTEGER,
  last_ts INTEGER,
  instruction_count INTEGER NOT NULL DEFAULT 0,
  dma_count INTEGER NOT NULL DEFAULT 0,
  total_flops REAL NOT NULL DEFAULT 0,
  hbm_bytes REAL NOT NULL DEFAULT 0,
  peak_flops REAL,
  hbm_ddr_bandwidth REAL,
  transpose_flops REAL NOT NULL DEFAULT 0  -- the part of total_flops spent on TRANSPOSE
);

CREATE TABLE ExecutionInfo (
  device_profile_id INTEGER NOT NULL,
  execution_index INTEGER NOT NULL,
  neff_name TEXT,
  execution_start_ts INTEGER,
  execution_end_ts INTEGER,
  num_subgraphs INTEGER,
  row_count INTEGER,
  exec_id INTEGER,
  PRIMARY KEY (device_profile_id, execution_index)
) WITHOUT ROWID;

CREATE TABLE Metadata (
  device_profile_id INTEGER PRIMARY KEY,
  profile_schema_version TEXT,
  ntff_version INTEGER,
  num_physical_cores INTEGER,
  first_hw_timestamp INTEGER,
  last_hw_timestamp INTEGER,
  ticks_per_nanosec REAL,
  instance_type TEXT,
  neuroncore_idx INTEGER,
  tensor_engine_num_rows INTEGER,
  tensor_engine_num_cols INTEGER,
  neuroncore_clock_freq REAL,
  hbm_ddr_bandwidth REAL
);

CREATE TABLE NeffHeader (
  file TEXT PRIMARY KEY,
  network_name TEXT,
  uuid TEXT,
  hash TEXT,
  header_size INTEGER,
  data_size INTEGER,
  package_version INTEGER,
  major_version INTEGER,
  minor_version INTEGER,
  build_version TEXT,
  neuroncore_count INTEGER,
  requested_tpb_count INTEGER
) WITHOUT ROWID;

-- Anything skipped or suspicious: file, byte offset, message.
CREATE TABLE Warning (
  id INTEGER PRIMARY KEY,
  message TEXT NOT NULL,
  category TEXT NOT NULL,         -- 'Missing Data', 'Corrupt Data', 'Clock'
  file TEXT,
  offset INTEGER
);

-- ------------------------------------------------------------------
-- Vendor-shaped views.

CREATE VIEW SystemProfileEvents AS
SELECT s.id AS id, n.s AS name, s.ts AS start_ts, s.ts + s.dur AS end_ts,
       s.dur AS duration_ns, t.source AS trace_event_source,
       t.instance_id AS instance_id, t.pid AS process_id, t.tid AS thread_id,
       t.nc_idx AS nc_idx, t.pcore_idx AS pcore_idx, t.worker_gid AS worker_gid,
       json_extract(s.args, '$.flow_id') AS flow_id,
       t.stream_id AS framework_stream_id, s.args AS extra_attributes_json,
       s.track AS track, s.lane AS lane
FROM slice s JOIN track t ON t.id = s.track JOIN str n ON n.id = s.name
WHERE t.domain = 'system' AND t.source IN ('neuron_rt', 'neuron_hw', 'framework');

CREATE VIEW Instruction AS
SELECT s.ts AS start_ts, s.ts + s.dur AS end_ts, s.dur AS duration_ns,
       json_extract(s.args, '$.engine') AS engine, t.label AS timeline_track,
       t.pcore_idx AS pcore_idx, n.s AS opcode,
       json_extract(s.args, '$.operands') AS operands, s.id AS id,
       json_extract(s.args, '$.pc') AS pc,
       json_extract(s.args, '$.hlo_name') AS hlo_name,
       g.s AS framework_op, t.device_profile_id AS device_profile_id,
       json_extract(s.args, '$.inst_dep_ids') AS inst_dep_ids,
       json_extract(s.args, '$.raw_flops') AS raw_flops
FROM slice s JOIN track t ON t.id = s.track JOIN str n ON n.id = s.name
LEFT JOIN str g ON g.id = s.grp
WHERE t.domain = 'device' AND t.source = 'engine';

CREATE VIEW DmaPacket AS
SELECT s.ts AS start_ts, s.ts + s.dur AS end_ts, s.dur AS duration_ns,
       t.pcore_idx AS pcore_idx, s.id AS id, t.label AS queue_name,
       json_extract(s.args, '$.queue_type') AS queue_type,
       json_extract(s.args, '$.engine_idx') AS engine_idx,
       json_extract(s.args, '$.read_bytes') AS read_bytes,
       json_extract(s.args, '$.write_bytes') AS write_bytes,
       json_extract(s.args, '$.transfer_bytes') AS transfer_bytes,
       json_extract(s.args, '$.variable') AS variable,
       t.device_profile_id AS device_profile_id
FROM slice s JOIN track t ON t.id = s.track
WHERE t.domain = 'device' AND t.source = 'dma';

CREATE VIEW SemaphoreUpdate AS
SELECT c.ts AS timestamp, t.label AS id, CAST(c.value AS INTEGER) AS value,
       t.pcore_idx AS pcore_idx, t.device_profile_id AS device_profile_id
FROM counter c JOIN track t ON t.id = c.track
WHERE t.source = 'semaphore' AND c.series = 0;

CREATE VIEW CpuUsage AS
SELECT c.ts AS timestamp, c.value AS util_percent, t.cpu_id AS cpu_id,
       t.instance_id AS instance_id
FROM counter c JOIN track t ON t.id = c.track
WHERE t.source = 'host_cpu_util' AND c.series = 0;

CREATE VIEW HostMemUsage AS
SELECT c.ts AS timestamp, CAST(c.value AS INTEGER) AS used_bytes,
       (SELECT p.value FROM counter p WHERE p.track = c.track AND p.series = 1
          AND p.ts = c.ts AND p.seq = c.seq) AS used_percent,
       t.instance_id AS instance_id
FROM counter c JOIN track t ON t.id = c.track
WHERE t.source = 'host_mem' AND c.series = 0;

-- One row per HBM sample; series 0 = total_bytes, 1..22 = the categories.
CREATE VIEW SystemProfileHbmUsage AS
SELECT c.ts AS timestamp,
       CAST(max(CASE c.series WHEN 0 THEN c.value END) AS INTEGER) AS total_bytes,
       CAST(max(CASE c.series WHEN 1 THEN c.value END) AS INTEGER) AS generic_bytes,
       CAST(max(CASE c.series WHEN 2 THEN c.value END) AS INTEGER) AS tensor_instructions_bytes,
       CAST(max(CASE c.series WHEN 3 THEN c.value END) AS INTEGER) AS scalar_instructions_bytes,
       CAST(max(CASE c.series WHEN 4 THEN c.value END) AS INTEGER) AS gpsimd_instructions_bytes,
       CAST(max(CASE c.series WHEN 5 THEN c.value END) AS INTEGER) AS io_bytes,
       CAST(max(CASE c.series WHEN 6 THEN c.value END) AS INTEGER) AS dram_spill_bytes,
       CAST(max(CASE c.series WHEN 7 THEN c.value END) AS INTEGER) AS weights_bytes,
       CAST(max(CASE c.series WHEN 8 THEN c.value END) AS INTEGER) AS profiler_buffers_bytes,
       CAST(max(CASE c.series WHEN 9 THEN c.value END) AS INTEGER) AS scalar_table_bytes,
       CAST(max(CASE c.series WHEN 10 THEN c.value END) AS INTEGER) AS vector_instructions_bytes,
       CAST(max(CASE c.series WHEN 11 THEN c.value END) AS INTEGER) AS sync_instructions_bytes,
       CAST(max(CASE c.series WHEN 12 THEN c.value END) AS INTEGER) AS shared_scratchpad_bytes,
       CAST(max(CASE c.series WHEN 13 THEN c.value END) AS INTEGER) AS tensors_bytes,
       CAST(max(CASE c.series WHEN 14 THEN c.value END) AS INTEGER) AS ucode_lib_bytes,
       CAST(max(CASE c.series WHEN 15 THEN c.value END) AS INTEGER) AS gpsimd_stdio_bytes,
       CAST(max(CASE c.series WHEN 16 THEN c.value END) AS INTEGER) AS collectives_bytes,
       CAST(max(CASE c.series WHEN 17 THEN c.value END) AS INTEGER) AS scratchpad_bytes,
       CAST(max(CASE c.series WHEN 18 THEN c.value END) AS INTEGER) AS dma_rings_runtime_bytes,
       CAST(max(CASE c.series WHEN 19 THEN c.value END) AS INTEGER) AS dma_rings_spill_bytes,
       CAST(max(CASE c.series WHEN 20 THEN c.value END) AS INTEGER) AS dma_rings_io_bytes,
       CAST(max(CASE c.series WHEN 21 THEN c.value END) AS INTEGER) AS dma_rings_collectives_bytes,
       CAST(max(CASE c.series WHEN 22 THEN c.value END) AS INTEGER) AS unknown_bytes,
       t.device_idx AS device_idx,
       t.hbm_idx AS hbm_idx,
       t.instance_id AS instance_id
FROM counter c JOIN track t ON t.id = c.track
WHERE t.source = 'neuron_hbm_usage'
GROUP BY c.track, c.ts, c.seq;

INSERT INTO counter_series (source, series, name, unit) VALUES
  ('neuron_hbm_usage', 0, 'total_bytes', 'bytes'),
  ('neuron_hbm_usage', 1, 'generic_bytes', 'bytes'),
  ('neuron_hbm_usage', 2, 'tensor_instructions_bytes', 'bytes'),
  ('neuron_hbm_usage', 3, 'scalar_instructions_bytes', 'bytes'),
  ('neuron_hbm_usage', 4, 'gpsimd_instructions_bytes', 'bytes'),
  ('neuron_hbm_usage', 5, 'io_bytes', 'bytes'),
  ('neuron_hbm_usage', 6, 'dram_spill_bytes', 'bytes'),
  ('neuron_hbm_usage', 7, 'weights_bytes', 'bytes'),
  ('neuron_hbm_usage', 8, 'profiler_buffers_bytes', 'bytes'),
  ('neuron_hbm_usage', 9, 'scalar_table_bytes', 'bytes'),
  ('neuron_hbm_usage', 10, 'vector_instructions_bytes', 'bytes'),
  ('neuron_hbm_usage', 11, 'sync_instructions_bytes', 'bytes'),
  ('neuron_hbm_usage', 12, 'shared_scratchpad_bytes', 'bytes'),
  ('neuron_hbm_usage', 13, 'tensors_bytes', 'bytes'),
  ('neuron_hbm_usage', 14, 'ucode_lib_bytes', 'bytes'),
  ('neuron_hbm_usage', 15, 'gpsimd_stdio_bytes', 'bytes'),
  ('neuron_hbm_usage', 16, 'collectives_bytes', 'bytes'),
  ('neuron_hbm_usage', 17, 'scratchpad_bytes', 'bytes'),
  ('neuron_hbm_usage', 18, 'dma_rings_runtime_bytes', 'bytes'),
  ('neuron_hbm_usage', 19, 'dma_rings_spill_bytes', 'bytes'),
  ('neuron_hbm_usage', 20, 'dma_rings_io_bytes', 'bytes'),
  ('neuron_hbm_usage', 21, 'dma_rings_collectives_bytes', 'bytes'),
  ('neuron_hbm_usage', 22, 'unknown_bytes', 'bytes'),
  ('host_cpu_util', 0, 'util_percent', '%'),
  ('host_mem', 0, 'used_bytes', 'bytes'),
  ('host_mem', 1, 'used_percent', '%'),
  ('host_to_device_bandwidth', 0, 'bandwidth_bytes_per_sec', 'B/s'),
  ('device_to_host_bandwidth', 0, 'bandwidth_bytes_per_sec', 'B/s'),
  ('semaphore', 0, 'value', ''),
  ('dma_throughput', 0, 'throughput', 'B/s'),
  ('sbuf', 0, 'util_percent', '%'),
  ('psum', 0, 'util_percent', '%'),
  ('mfu', 0, 'mfu_estimated_percent', '%'),
  ('chrome_counter', 0, 'value', '');
