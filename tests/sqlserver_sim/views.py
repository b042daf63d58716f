"""The rows of each system view, DMV and table-valued function, computed from the simulator's state.

Every row carries every column the catalogue (``catalogue.json``) lists for its object, no more: what the state
does not model is NULL (``documented_columns()`` in server.py is the list; tests/test_sqlserver_views.py checks it).
A query's shape (which object, which columns, which rows pass its filters) is then computed by ``evaluate.py``;
only the contention figures inside the statistics come from the phenomena model (server.phenomena_on).

Pages followed: each object's own Microsoft Learn page, named in the catalogue entry.
"""
from __future__ import annotations

import os

from . import permissions as P
from . import query as Q
from . import server as S

DATA_PATH = "/var/opt/mssql/data/"  # SERVERPROPERTY('InstanceDefaultDataPath') on Linux; any path would do
LOG_WRITER_SESSION = 7  # system sessions have ids below 51; which one the log writer takes is not documented


class NotModelled(Exception):
    """An object the catalogue knows whose rows the simulator does not compute."""


def columns(name: str) -> list[str]:
    return list(Q.catalogue()["objects"][name]["columns"])


def _rows(name: str, dicts: list[dict]) -> list[dict]:
    cols = columns(name)
    out = []
    for d in dicts:
        extra = set(d) - set(cols)
        if extra:
            raise AssertionError(f"{name}: {sorted(extra)} are not in the catalogue's columns")
        out.append({c: d.get(c) for c in cols})
    return out


def _db(state, s):
    return state["databases"].get(s.database) or {}


def tables(db: dict) -> dict:
    return db.get("tables", {})


def find_table(db: dict, name: str) -> tuple[str, dict] | None:
    """A user table by name: ``dbo.x``, ``[dbo].[x]`` or ``x``, case-insensitive (the default collation)."""
    bare = name.replace("[", "").replace("]", "").split(".")[-1].lower()
    if name.lower().count(".") >= 1 and name.replace("[", "").replace("]", "").split(".")[-2].lower() != "dbo":
        return None
    for key, t in tables(db).items():
        if key.lower() == bare:
            return key, t
    return None


def object_id(state: dict, db: dict, t: dict) -> int:
    if "object_id" not in t:
        state["next_object_id"] = state.get("next_object_id", 565577053) + 16
        t["object_id"] = state["next_object_id"]
    return t["object_id"]


def table_columns(t: dict) -> dict:
    return {k: v for k, v in t.get("columns", {}).items() if not k.startswith("__")}


def table_rows(t: dict, lazy: bool = False):
    """A user table's rows: the rows kept, or (for a table whose rows are counted only) rows numbered by its
    IDENTITY column with the other columns NULL (``lazy``: made one by one as they are read)."""
    if "data" in t:
        return [dict(r) for r in t["data"]]
    cols = table_columns(t)
    ident = next((c for c, d in cols.items() if d.get("identity")), None)
    made = ({c: (i + 1 if c == ident else None) for c in cols} for i in range(t.get("rows", 0)))
    return made if lazy else list(made)


def filegroups(db: dict) -> list[tuple[int, str, str, str]]:
    """(data_space_id, name, type, type_desc): PRIMARY is 1, the others in order of creation (sys.filegroups page)."""
    out = [(1, "PRIMARY", "FG", "ROWS_FILEGROUP")]
    for i, fg in enumerate(db.get("filegroups", [])):
        mo = fg == "FX" or fg in db.get("mo_filegroups", [])
        out.append((2 + i, fg, "FX" if mo else "FG",
                    "MEMORY_OPTIMIZED_DATA_FILEGROUP" if mo else "ROWS_FILEGROUP"))
    return out


# -- server-scoped DMVs ----------------------------------------------------------------------------
def dm_os_wait_stats(state, s, args):
    return _rows("sys.dm_os_wait_stats", [
        {"wait_type": n, "waiting_tasks_count": v[0], "wait_time_ms": v[1], "max_wait_time_ms": v[2],
         "signal_wait_time_ms": v[3]} for n, v in sorted(state["stats"]["wait"].items())])


def dm_os_latch_stats(state, s, args):
    return _rows("sys.dm_os_latch_stats", [
        {"latch_class": n, "waiting_requests_count": v[0], "wait_time_ms": v[1], "max_wait_time_ms": v[2]}
        for n, v in sorted(state["stats"]["latch"].items())])


def dm_os_spinlock_stats(state, s, args):
    return _rows("sys.dm_os_spinlock_stats", [
        {"name": n, "collisions": v[0], "spins": v[1], "spins_per_collision": (v[1] / v[0]) if v[0] else 0.0,
         "sleep_time": v[2], "backoffs": v[3]} for n, v in sorted(state["stats"]["spinlock"].items())])


def dm_os_waiting_tasks(state, s, args):
    out = []
    for spid, wait, ms, desc, blocking, _db_name in S._waiting_tasks(state, None, None):
        out.append({"waiting_task_address": f"0x{0x1A000 + spid:016X}", "session_id": spid, "exec_context_id": 0,
                    "wait_duration_ms": ms, "wait_type": wait, "resource_address": None,
                    "blocking_task_address": None, "blocking_session_id": blocking,
                    "blocking_exec_context_id": None, "resource_description": desc})
    return _rows("sys.dm_os_waiting_tasks", out)


def dm_os_performance_counters(state, s, args):
    """The counters the project reads: the ghost chapter's three and the harness's (server._perf_counters); a
    value is the counter's current one, not moved by being read."""
    c = state.get("counters", {"ghost": 0, "locks": 0, "version_kb": 0})
    out = [("Access Methods", "Skipped Ghosted Records/sec", "", c.get("ghost", 0), 272696576),
           ("Locks", "Lock Requests/sec", "_Total", c.get("locks", 0), 272696576),
           ("Transactions", "Version Store Size (KB)", "", c.get("version_kb", 0), 65792)]
    for key, value in sorted(state.get("perf", {}).items()):
        obj, name, inst = key.split("|")
        out.append((obj, name, inst, value, S.PERF_COUNTERS[name][0]))
    return _rows("sys.dm_os_performance_counters", [  # nchar(128) columns: the names come padded with spaces
        {"object_name": f"SQLServer:{o}" + " " * 8, "counter_name": n + " " * 8, "instance_name": i + " " * 8,
         "cntr_value": v, "cntr_type": t} for o, n, i, v, t in out])


def dm_os_sys_info(state, s, args):
    cores = state["cpus"] // state["threads_per_core"]
    return _rows("sys.dm_os_sys_info", [{
        "cpu_count": state["cpus"], "hyperthread_ratio": state["cpus"], "physical_memory_kb": state["memory_gb"] * 2**20,
        "committed_target_kb": int(state["memory_gb"] * 0.9 * 2**20),
        "affinity_type": 2 if state["affinity"] is None else 1,
        "affinity_type_desc": "AUTO" if state["affinity"] is None else "MANUAL", "socket_count": 1,
        "cores_per_socket": cores, "numa_node_count": 1, "scheduler_count": len(S.online_cpus(state))}])


def dm_os_schedulers(state, s, args):
    return _rows("sys.dm_os_schedulers", [
        {"scheduler_address": f"0x{0x2B0000 + sid:016X}", "parent_node_id": node, "scheduler_id": sid,
         "cpu_id": cpu, "status": status, "is_online": online, "is_idle": 0 if sid == _log_writer_cpu(state) else 1,
         "current_tasks_count": 1 if sid == _log_writer_cpu(state) else 0, "runnable_tasks_count": 0}
        for sid, cpu, node, online, status in S._schedulers(state)])


def dm_os_nodes(state, s, args):
    return _rows("sys.dm_os_nodes", [
        {"node_id": 0, "node_state_desc": "ONLINE", "online_scheduler_count": len(S.online_cpus(state))},
        {"node_id": 64, "node_state_desc": "ONLINE DAC", "online_scheduler_count": 1}])


def _log_writer_cpu(state) -> int:
    online = S.online_cpus(state)
    return online[0] if online else 0


def _requests(state, s):
    """(session_id, command, status, scheduler, wait_type, database): the log writer, the sessions that last waited,
    and the caller's own request."""
    out = [(LOG_WRITER_SESSION, "LOG WRITER", "background", _log_writer_cpu(state), "LOGMGR_QUEUE", "master")]
    for spid, sess in sorted(state["sessions"].items()):
        if sess.get("last_wait") and int(spid) != s.spid:
            out.append((int(spid), "INSERT", "suspended", 0, sess["last_wait"], sess.get("database")))
    out.append((s.spid, "SELECT", "running", 0, None, s.database))
    if not P.sees_other_sessions(state, "sys.dm_exec_requests", S.major(state)):  # its page: own request only
        out = [r for r in out if r[0] == s.spid]
    return out


def dm_exec_requests(state, s, args):
    return _rows("sys.dm_exec_requests", [
        {"session_id": spid, "request_id": 0, "status": status, "command": command,
         "database_id": (state["databases"].get(dbn) or {}).get("id"), "wait_type": wait,
         "wait_time": 2 if wait else 0, "wait_resource": "", "scheduler_id": sched,
         "task_address": f"0x{0x3C000 + spid:016X}", "page_resource": None}
        for spid, command, status, sched, wait, dbn in _requests(state, s)])


def dm_os_tasks(state, s, args):
    return _rows("sys.dm_os_tasks", [
        {"task_address": f"0x{0x3C000 + spid:016X}", "task_state": "RUNNING" if status == "running" else "SUSPENDED",
         "scheduler_id": sched, "session_id": spid, "exec_context_id": 0, "worker_address": f"0x{0x4D000 + spid:016X}"}
        for spid, command, status, sched, wait, dbn in _requests(state, s)])


def dm_exec_sessions(state, s, args):
    rows = []
    for spid, sess in sorted(state["sessions"].items()):
        if int(spid) == s.spid:
            continue
        rows.append((int(spid), sess.get("pid"), sess.get("database")))
    rows.append((s.spid, os.getpid(), s.database))
    if not P.sees_other_sessions(state, "sys.dm_exec_sessions", S.major(state)):
        rows = [r for r in rows if r[0] == s.spid]
    return _rows("sys.dm_exec_sessions", [
        {"session_id": spid, "login_time": None, "host_name": "", "program_name": "contention-book",
         "host_process_id": pid, "login_name": P.login_name(state), "last_request_end_time": None,
         "is_user_process": 1, "database_id": (state["databases"].get(dbn) or {}).get("id"),
         "status": "running" if spid == s.spid else "sleeping"} for spid, pid, dbn in rows])


def _open_snapshot_sessions(state):
    return [(int(spid), x) for spid, x in sorted(state["sessions"].items()) if x.get("snapshot_txn")]


def dm_tran_active_snapshot_database_transactions(state, s, args):
    """Transactions that read row versions: a session in an open transaction under READ_COMMITTED_SNAPSHOT
    (is_snapshot 0: statement-level versioning, the DMV's page)."""
    return _rows("sys.dm_tran_active_snapshot_database_transactions", [
        {"transaction_id": 1000 + spid, "transaction_sequence_num": 100 + spid, "session_id": spid,
         "is_snapshot": 0, "elapsed_time_seconds": 1} for spid, _ in _open_snapshot_sessions(state)])


def dm_tran_session_transactions(state, s, args):
    return _rows("sys.dm_tran_session_transactions", [
        {"session_id": spid, "transaction_id": 1000 + spid, "is_user_transaction": 1, "is_local": 1}
        for spid, _ in _open_snapshot_sessions(state)])


# -- database-scoped views -------------------------------------------------------------------------
def databases(state, s, args):
    return _rows("sys.databases", [
        {"name": name, "database_id": db["id"], "owner_sid": db.get("owner"), "recovery_model_desc": db["recovery"],
         "delayed_durability_desc": db["delayed_durability"], "is_read_committed_snapshot_on": int(db["rcsi"]),
         "snapshot_isolation_state_desc": db["snapshot"], "is_accelerated_database_recovery_on": int(db["adr"])}
        for name, db in state["databases"].items()])


def database_files(state, s, args):
    db = _db(state, s)
    fg_id = {name: i for i, name, _t, _d in filegroups(db)}
    return _rows("sys.database_files", [
        {"file_id": f["file_id"], "type": {"ROWS": 0, "LOG": 1, "FILESTREAM": 2}[f["type_desc"]],
         "type_desc": f["type_desc"], "data_space_id": 0 if f["type_desc"] == "LOG" else
         fg_id.get(f.get("filegroup", "PRIMARY"), 1), "name": f["name"], "physical_name": f["physical_name"],
         "size": f["size_mb"] * 128} for f in db.get("files", [])])


def filegroups_view(state, s, args):
    return _rows("sys.filegroups", [{"name": n, "data_space_id": i, "type": t, "type_desc": d}
                                    for i, n, t, d in filegroups(_db(state, s))])


def _indexes(state, db):
    """(table, object_id, index_id, name, type, type_desc, key columns) of each user table's one index or heap."""
    out = []
    for key, t in tables(db).items():
        oid = object_id(state, db, t)
        cols = t.get("columns", {})
        keys = cols.get("__keys__") or []
        if keys:
            hash_ = bool(cols.get("__hash__"))
            clustered = not hash_ and not cols.get("__nonclustered__")
            out.append((key, oid, 1 if clustered else 2, cols.get("__key_name__") or f"PK_{key}",
                        7 if hash_ else 1 if clustered else 2,
                        "NONCLUSTERED HASH" if hash_ else "CLUSTERED" if clustered else "NONCLUSTERED", keys, t))
        else:
            out.append((key, oid, 0, None, 0, "HEAP", [], t))
    return out


def indexes(state, s, args):
    db = _db(state, s)
    return _rows("sys.indexes", [
        {"object_id": oid, "name": name, "index_id": iid, "type": typ, "type_desc": desc,
         "optimize_for_sequential_key": int(bool(t.get("columns", {}).get("__sequential__"))), "data_space_id": 1}
        for _k, oid, iid, name, typ, desc, _keys, t in _indexes(state, db)])


def index_columns(state, s, args):
    db = _db(state, s)
    out = []
    for _k, oid, iid, _n, _t, _d, keys, t in _indexes(state, db):
        names = list(table_columns(t))
        for j, col in enumerate(keys):
            out.append({"object_id": oid, "index_id": iid, "index_column_id": j + 1,
                        "column_id": names.index(col) + 1 if col in names else None, "key_ordinal": j + 1})
    return _rows("sys.index_columns", out)


SYSTEM_COLUMNS = 4096  # assumed: sys.all_columns' system-defined rows (docs/sqlserver-simulator.md)


def columns_view(name):
    """sys.columns: the user tables' columns; sys.all_columns also "the union of all user-defined and system
    objects" (its page), the system objects' columns with negative object_ids (sys.all_objects page).  How many a
    server has is not documented; :data:`SYSTEM_COLUMNS` is the simulator's assumption."""
    def rows(state, s, args):
        db = _db(state, s)
        out = []
        for _k, t in tables(db).items():
            for j, (col, d) in enumerate(table_columns(t).items()):
                row = {"object_id": object_id(state, db, t), "name": d.get("name", col), "column_id": j + 1,
                       "is_identity": int(bool(d.get("identity")))}
                out.append({k: v for k, v in row.items() if k in columns(name)})
        if name == "sys.all_columns":
            wanted = columns(name)
            for i in range(SYSTEM_COLUMNS):
                row = {"object_id": -1 - i // 16, "name": f"system_column_{i}", "column_id": 1 + i % 16,
                       "is_identity": 0}
                out.append({k: v for k, v in row.items() if k in wanted})
        return _rows(name, out)
    return rows


def objects(state, s, args):
    db = _db(state, s)
    out = [{"name": k, "object_id": object_id(state, db, t), "schema_id": 1, "type": "U "} for k, t in tables(db).items()]
    for p in db.get("procedures", {}):
        out.append({"name": p, "object_id": None, "schema_id": 1, "type": "P "})
    return _rows("sys.objects", out)


def schemas(state, s, args):
    return _rows("sys.schemas", [{"name": "dbo", "schema_id": 1}, {"name": "sys", "schema_id": 4}])


def partitions(state, s, args):
    db = _db(state, s)
    return _rows("sys.partitions", [
        {"partition_id": oid * 100 + iid, "object_id": oid, "index_id": iid, "partition_number": 1,
         "hobt_id": oid * 100 + iid, "rows": t.get("rows", 0)} for _k, oid, iid, _n, _t, _d, _keys, t in
        _indexes(state, db)])


def partition_functions(state, s, args):
    return _rows("sys.partition_functions", [{"name": n, "function_id": 65536 + i}
                                             for i, n in enumerate(_db(state, s).get("partition_functions", []))])


def partition_schemes(state, s, args):
    return _rows("sys.partition_schemes", [{"name": n, "data_space_id": 65601 + i, "function_id": 65536}
                                           for i, n in enumerate(_db(state, s).get("partition_schemes", []))])


def configurations(state, s, args):
    return _rows("sys.configurations", [{"configuration_id": 1535 + i, "name": n, "value": v, "value_in_use": v}
                                        for i, (n, v) in enumerate(S._mask_config(state))])


def extended_properties(state, s, args):
    return _rows("sys.extended_properties", [{"class": 0, "major_id": 0, "minor_id": 0, "name": n, "value": v}
                                             for n, v in _db(state, s).get("props", {}).items()])


# -- table-valued functions ------------------------------------------------------------------------
def _tables_of(state, s, db_id, oid):
    db = next((d for d in state["databases"].values() if d["id"] == db_id), None) if db_id is not None else None
    if db_id is not None and db is None:
        return None, []
    dbs = [db] if db is not None else list(state["databases"].values())
    out = []
    for d in dbs:
        for _k, t in tables(d).items():
            if oid is None or object_id(state, d, t) == oid:
                out.append(t)
    return db, out


def dm_db_index_physical_stats(state, s, args):
    """(database_id, object_id, index_id, partition_number, mode): a row per level in DETAILED, the leaf only in
    SAMPLED and LIMITED; LIMITED leaves the record counts NULL (its page).  The figures of a table under
    READ_COMMITTED_SNAPSHOT with the phenomena on are the ghost chapter's model (server._index_stats)."""
    db_id, oid, index_id, _part, mode = (list(args) + [None] * 5)[:5]
    mode = (mode or "LIMITED").upper()
    db, found = _tables_of(state, s, db_id, oid)
    out = []
    for t in found:
        home = db or next(d for d in state["databases"].values() if t in tables(d).values())
        iid = 1 if (t.get("columns", {}).get("__keys__")) else 0
        if index_id is not None and index_id != iid:
            continue
        levels = S._index_stats(state, home, t)
        if mode != "DETAILED":
            levels = [lv for lv in levels if lv[0] == 0]
        for level, pages, used, avg, rows, ghosts, versions, ghost_versions in levels:
            counted = mode != "LIMITED"
            out.append({"database_id": home["id"], "object_id": object_id(state, home, t), "index_id": iid,
                        "partition_number": 1, "index_type_desc": "CLUSTERED INDEX" if iid else "HEAP",
                        "alloc_unit_type_desc": "IN_ROW_DATA", "index_depth": len(S._index_stats(state, home, t)),
                        "index_level": level, "avg_fragmentation_in_percent": 0.0, "fragment_count": 1,
                        "page_count": pages, "avg_page_space_used_in_percent": used if counted else None,
                        "record_count": rows if counted else None, "ghost_record_count": ghosts if counted else None,
                        "version_ghost_record_count": ghost_versions if counted else None,
                        "min_record_size_in_bytes": avg if counted else None,
                        "max_record_size_in_bytes": avg if counted else None,
                        "avg_record_size_in_bytes": avg if counted else None,
                        "forwarded_record_count": (0 if counted else None) if not iid else None,
                        "compressed_page_count": 0, "version_record_count": versions if counted else None})
    return _rows("sys.dm_db_index_physical_stats", out)


def dm_db_index_operational_stats(state, s, args):
    """(database_id, object_id, index_id, partition_number): a row per user index that was written; the counts of
    rows inserted and deleted come from the simulated tables, the waits are not modelled (0)."""
    db_id, oid = (list(args) + [None] * 4)[:2]
    db, found = _tables_of(state, s, db_id, oid)
    out = []
    for t in found:
        home = db or next(d for d in state["databases"].values() if t in tables(d).values())
        out.append({"database_id": home["id"], "object_id": object_id(state, home, t),
                    "index_id": 1 if t.get("columns", {}).get("__keys__") else 0, "partition_number": 1,
                    "leaf_insert_count": t.get("inserted", t.get("rows", 0)), "leaf_delete_count": t.get("deleted", 0),
                    "leaf_ghost_count": 0, "row_lock_wait_count": 0, "row_lock_wait_in_ms": 0,
                    "page_latch_wait_count": 0, "page_latch_wait_in_ms": 0})
    return _rows("sys.dm_db_index_operational_stats", out)


def fn_pagerescracker(state, s, args):
    """sys.fn_PageResCracker(page_resource): the simulator's requests carry no page_resource (NULL), so no row."""
    if not args or args[0] is None:
        return []
    raise NotModelled("sys.fn_PageResCracker of a page_resource value")


FIRST_PAGE = 1000  # the simulated leaf chain of the table whose inserts go to its last page: pages 1000 .. last_page


def _leaf_pages(state, database_id):
    """(db, table key, object_id, index_id, first page, last page) of the one leaf chain the simulator keeps: the
    table whose rows were last added at an IDENTITY-led key's end (server.batch_phenomena), in file 1."""
    db = next((d for d in state["databases"].values() if d["id"] == database_id), None)
    if db is None or db.get("last_page_table") not in db.get("tables", {}):
        return None
    key = db["last_page_table"]
    for k, oid, iid, _n, _t, _d, _keys, _tbl in _indexes(state, db):
        if k == key:
            return db, key, oid, iid, FIRST_PAGE, db.get("last_page", FIRST_PAGE)
    return None


def dm_db_page_info(state, s, args):
    """One row for a page of the simulated leaf chain (its page; a leaf, level 0; the last page has no next page,
    next_page_page_id 0); no row for a page the simulator does not keep."""
    if len(args) < 3 or any(a is None for a in args[:3]):
        return []
    database_id, file_id, page_id = (int(a) for a in args[:3])
    chain = _leaf_pages(state, database_id)
    if chain is None or file_id != 1:
        return []
    _db_, _k, oid, iid, first, last = chain
    if not first <= page_id <= last:
        return []
    return _rows("sys.dm_db_page_info", [{
        "database_id": database_id, "file_id": 1, "page_id": page_id, "page_type_desc": "DATA_PAGE", "page_level": 0,
        "object_id": oid, "index_id": iid, "partition_id": oid * 100 + iid,
        "next_page_page_id": 0 if page_id == last else page_id + 1, "prev_page_page_id": page_id - 1 if page_id > first
        else 0}])


def dm_os_buffer_descriptors(state, s, args):
    """The simulated leaf chains' pages, all in memory: a data page (level 0) of the partition's in-row allocation
    unit (allocation_unit_id = the partition's hobt_id, as sys.allocation_units below)."""
    out = []
    for db in state["databases"].values():
        chain = _leaf_pages(state, db["id"])
        if chain is None:
            continue
        _db_, _k, oid, iid, first, last = chain
        out += [{"database_id": db["id"], "file_id": 1, "page_id": p, "page_level": 0,
                 "allocation_unit_id": oid * 100 + iid, "page_type": "DATA_PAGE", "row_count": 200,
                 "free_space_in_bytes": 96, "is_modified": 1} for p in range(first, last + 1)]
    return _rows("sys.dm_os_buffer_descriptors", out)


def allocation_units(state, s, args):
    """One in-row data allocation unit (type 1) per partition, its container the partition's hobt_id."""
    db = _db(state, s)
    return _rows("sys.allocation_units", [{"allocation_unit_id": oid * 100 + iid, "type": 1,
                                           "container_id": oid * 100 + iid}
                                          for _k, oid, iid, _n, _t, _d, _keys, _tbl in _indexes(state, db)])


PROVIDERS = {
    "sys.dm_os_wait_stats": dm_os_wait_stats, "sys.dm_os_latch_stats": dm_os_latch_stats,
    "sys.dm_os_spinlock_stats": dm_os_spinlock_stats, "sys.dm_os_waiting_tasks": dm_os_waiting_tasks,
    "sys.dm_os_performance_counters": dm_os_performance_counters, "sys.dm_os_sys_info": dm_os_sys_info,
    "sys.dm_os_schedulers": dm_os_schedulers, "sys.dm_os_nodes": dm_os_nodes, "sys.dm_os_tasks": dm_os_tasks,
    "sys.dm_exec_requests": dm_exec_requests, "sys.dm_exec_sessions": dm_exec_sessions,
    "sys.dm_tran_active_snapshot_database_transactions": dm_tran_active_snapshot_database_transactions,
    "sys.dm_tran_session_transactions": dm_tran_session_transactions,
    "sys.databases": databases, "sys.database_files": database_files, "sys.filegroups": filegroups_view,
    "sys.indexes": indexes, "sys.index_columns": index_columns, "sys.columns": columns_view("sys.columns"),
    "sys.all_columns": columns_view("sys.all_columns"), "sys.objects": objects, "sys.schemas": schemas,
    "sys.partitions": partitions, "sys.partition_functions": partition_functions,
    "sys.partition_schemes": partition_schemes, "sys.configurations": configurations,
    "sys.extended_properties": extended_properties,
    "sys.dm_db_index_physical_stats": dm_db_index_physical_stats,
    "sys.dm_db_index_operational_stats": dm_db_index_operational_stats,
    "sys.fn_pagerescracker": fn_pagerescracker, "sys.dm_db_page_info": dm_db_page_info,
    "sys.dm_os_buffer_descriptors": dm_os_buffer_descriptors, "sys.allocation_units": allocation_units,
}


def rows(state: dict, s, name: str, args: list) -> list[dict]:
    fn = PROVIDERS.get(name)
    if fn is None:
        raise NotModelled(f"the simulator computes no rows of {name}")
    return fn(state, s, args)
