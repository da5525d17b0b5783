/*
 * The history schema as migration steps. A new database runs every step in order; an older one
 * runs the steps it lacks, in one transaction, and PRAGMA user_version records where it stands.
 * Never edit a step that has shipped: add a new one (and raise HISTORY_SCHEMA_VERSION). The
 * layout is described in docs/history.md.
 */
#include "store/history_internal.h"

const char *const history_schema_steps[HISTORY_SCHEMA_VERSION] = {
	/* 1: runs with their machine context, results and findings */
	"CREATE TABLE runs ("
	"  id INTEGER PRIMARY KEY,"
	"  kind TEXT NOT NULL CHECK (kind IN ('check', 'bench', 'tune', 'watch')),"
	"  started_utc TEXT NOT NULL,"
	"  finished_utc TEXT,"
	"  complete INTEGER NOT NULL DEFAULT 0,"
	"  host TEXT,"
	"  command TEXT,"
	"  version TEXT,"
	"  summary TEXT);"
	"CREATE INDEX runs_by_start ON runs (started_utc);"
	"CREATE TABLE run_meta ("
	"  run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,"
	"  key TEXT NOT NULL,"
	"  value TEXT,"
	"  PRIMARY KEY (run_id, key));"
	"CREATE TABLE gpus ("
	"  run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,"
	"  idx INTEGER NOT NULL,"
	"  name TEXT, uuid TEXT, bus_id TEXT,"
	"  sm_clock_mhz REAL, mem_clock_mhz REAL, temperature_c REAL, power_w REAL, throttle TEXT,"
	"  PRIMARY KEY (run_id, idx));"
	"CREATE TABLE results ("
	"  run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,"
	"  name TEXT NOT NULL,"
	"  gpu INTEGER NOT NULL DEFAULT -1,"
	"  value REAL,"
	"  unit TEXT,"
	"  better INTEGER NOT NULL DEFAULT 0 CHECK (better IN (-1, 0, 1)),"
	"  min REAL, max REAL,"
	"  repeats INTEGER NOT NULL DEFAULT 0,"
	"  params TEXT,"
	"  PRIMARY KEY (run_id, name, gpu));"
	"CREATE TABLE findings ("
	"  run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,"
	"  seq INTEGER NOT NULL,"
	"  id TEXT NOT NULL,"
	"  severity TEXT NOT NULL,"
	"  title TEXT,"
	"  evidence TEXT,"
	"  fix TEXT,"
	"  PRIMARY KEY (run_id, seq));",

	/* 2: watch --record samples, named baselines, results looked up by name across runs */
	"CREATE TABLE samples ("
	"  run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,"
	"  t REAL NOT NULL,"
	"  gpu INTEGER NOT NULL,"
	"  metric TEXT NOT NULL,"
	"  value REAL);"
	"CREATE INDEX samples_by_run ON samples (run_id, t);"
	"CREATE TABLE baselines ("
	"  name TEXT PRIMARY KEY,"
	"  run_id INTEGER NOT NULL REFERENCES runs (id),"
	"  set_utc TEXT NOT NULL);"
	"CREATE INDEX results_by_name ON results (name, gpu);",

	/* 3: diag runs. SQLite cannot change a CHECK constraint in place: the runs table is rebuilt
	 * (history_open runs the steps with foreign keys off, so the rows that reference runs stay;
	 * the renamed table takes the name they reference) */
	"CREATE TABLE runs_v3 ("
	"  id INTEGER PRIMARY KEY,"
	"  kind TEXT NOT NULL CHECK (kind IN ('check', 'bench', 'tune', 'watch', 'diag')),"
	"  started_utc TEXT NOT NULL,"
	"  finished_utc TEXT,"
	"  complete INTEGER NOT NULL DEFAULT 0,"
	"  host TEXT,"
	"  command TEXT,"
	"  version TEXT,"
	"  summary TEXT);"
	"INSERT INTO runs_v3 (id, kind, started_utc, finished_utc, complete, host, command, version, summary)"
	"  SELECT id, kind, started_utc, finished_utc, complete, host, command, version, summary FROM runs;"
	"DROP TABLE runs;"
	"ALTER TABLE runs_v3 RENAME TO runs;"
	"CREATE INDEX runs_by_start ON runs (started_utc);",
};
