"""Run a parsed batch (``tsql.py``) against the simulator's state: the answer is computed from the statement.

A SELECT reads the rows of the objects it names (``views.py`` for system views, DMVs and table-valued functions;
the simulated user tables, temporary tables and table variables), joins and filters them by its own ON and WHERE,
groups, orders and projects the columns it selects.  A name that is not there is the server's error: Msg 208
(object), 207 (column), 209 (ambiguous column), 4104 (an alias that is not bound).  DDL and DML on user tables
change the simulated tables (CREATE TABLE records its columns and key; INSERT adds rows; TRUNCATE and DROP).  What
the simulator cannot evaluate raises :class:`Unanswerable`, naming the statement.

The contention a write causes (the phenomena model) is applied once per batch by ``server.batch_phenomena``.
"""
from __future__ import annotations

import datetime as _dt
import functools
import itertools
import os
import re
from typing import Any

from . import query as Q
from . import server as S
from . import tsql as T
from . import views as V

MAX_LOOP = 1_000_000


class Unanswerable(S.UnknownStatement):
    """A statement that parsed but that the simulator cannot answer from its state (named in the message)."""


@functools.lru_cache(maxsize=512)
def parsed(sql: str) -> tuple:
    return tuple(T.parse(sql))


KEEP_EVALUATED = 200  # rows of a large INSERT ... SELECT evaluated one by one; the rest are counted (below)
EAGER_ROWS = 100_000  # a join's frames kept as a list up to this many; beyond it they are produced on demand


class _Lazy:
    """Rows produced on demand, with their number known without producing them.

    The harness fills tables with ``SELECT TOP (n) ROW_NUMBER() OVER (...) FROM sys.all_columns AS a CROSS JOIN
    sys.all_columns AS b`` and with cross joins of ten-row CTEs (a trillion rows before TOP): a cross join's size is
    the product of its sides', TOP's the smaller of n and its input's, so the answer is computed without building
    rows nobody reads.  Iterating produces the rows, in order."""

    def __init__(self, make, count: int):
        self.make, self.count = make, count

    def __iter__(self):
        return iter(self.make())

    def __len__(self) -> int:
        return self.count

    def __bool__(self) -> bool:
        return self.count > 0


def _cross(frames, alias: str, rows):
    """Every frame with every row of a source bound as ``alias`` (a list while small, else :class:`_Lazy`)."""
    n = len(frames) * len(rows)
    if n <= EAGER_ROWS and not isinstance(frames, _Lazy) and not isinstance(rows, _Lazy):
        return [dict(f, **{alias: r}) for f in frames for r in rows]
    return _Lazy(lambda: (dict(f, **{alias: r}) for f in frames for r in rows), n)


def _top(rows, n: int):
    n = max(0, int(n))
    if isinstance(rows, _Lazy):
        return _Lazy(lambda: itertools.islice(rows, n), min(n, len(rows)))
    return rows[:n]


class _Rowset:
    """A source bound in a FROM clause: its alias, its columns, its rows (dicts)."""

    def __init__(self, alias: str, columns: list[str], rows: list[dict] | None):
        self.alias, self.columns, self.rows = alias.lower(), [c.lower() for c in columns], rows
        self.colset = set(self.columns)


class _Env:
    """What an expression sees: one frame (alias -> row, None for a row a LEFT JOIN did not find), the sources'
    columns, an enclosing query's environment (correlated subqueries), a group's frames, output aliases."""

    def __init__(self, sources: list[_Rowset], frame: dict, outer: "_Env | None" = None, group: list | None = None,
                 outputs: dict | None = None):
        self.sources, self.frame, self.outer, self.group, self.outputs = sources, frame, outer, group, outputs
        self.window: dict | None = None  # id(window node) -> this row's number (ROW_NUMBER), once numbered


class Batch:
    def __init__(self, state: dict, s, params: tuple):
        self.state, self.s, self.params = state, s, params
        self.vars: dict[str, Any] = {"@@rowcount": 0}
        self.tvars: dict[str, dict] = {}
        self.results: list = []
        self.written: dict[str, int] = {}
        self.updated: dict[str, dict] = {}
        self.executed: list[tuple[str, list]] = []  # (procedure, argument values) of each EXEC
        self.parallel: dict[str, int] = {}  # rows of heaps filled by a parallel INSERT ... SELECT WITH (TABLOCK)
        self.major = 16 if S.azure(state) else S.major(state)
        if not hasattr(s, "temp"):
            s.temp = {}

    # -- errors
    def err(self, number: int, message: str):
        return S.sql_error(number, message)

    # -- statements
    def run(self, stmts) -> list:
        for st in stmts:
            self.stmt(st)
        return self.results

    def stmt(self, st: T.Stmt) -> None:
        try:
            getattr(self, "do_" + st.kind)(st)
        except (T.Unsupported, V.NotModelled) as exc:
            raise Unanswerable(f"the simulator cannot answer this statement ({exc}): {st.text[:300]!r}") from None

    def do_select(self, st):
        q = st.data["query"]
        cols, rows, assigns = self.query(q, None)
        if assigns:
            for row in rows:
                for var, value in zip(assigns, row):
                    if var:
                        self.vars[var] = value
        elif q.into:
            self.create_temp(q.into, cols, rows)
        else:
            self.results.append((cols, [tuple(r) for r in rows]))
        self.vars["@@rowcount"] = len(rows)

    def do_declare(self, st):
        for var, _typ, value in st.data["vars"]:
            self.vars[var] = None if value is None else self.eval(value, _Env([], {}))
        for var, cols in st.data.get("tables", []):
            self.tvars[var] = {"columns": cols, "data": []}

    def do_set_var(self, st):
        var = st.data["var"]
        if var not in self.vars:
            raise self.err(137, f'Must declare the scalar variable "{var}".')
        value = self.eval(st.data["value"], _Env([], {}))
        op = st.data["op"]
        if op != "=":
            value = self.arith(op[0], self.vars[var], value)
        self.vars[var] = value

    def do_set_option(self, st):
        m = re.match(r"^SET\s+LOCK_TIMEOUT\s+(\d+)", st.text, re.I)
        if m:
            self.s.lock_timeout_ms = int(m.group(1))

    def do_if(self, st):
        branch = st.data["then"] if self.eval(st.data["cond"], _Env([], {})) is True else st.data["else"]
        self.run(branch)

    def do_while(self, st):
        n = 0
        while self.eval(st.data["cond"], _Env([], {})) is True:
            n += 1
            if n > MAX_LOOP:
                raise Unanswerable(f"a WHILE loop ran more than {MAX_LOOP} times: {st.text[:200]!r}")
            self.run(st.data["body"])

    def do_block(self, st):
        self.run(st.data["body"])

    def do_begin_tran(self, st):
        self.s.trancount += 1
        sess = self.state["sessions"].setdefault(str(self.s.spid), {"database": self.s.database,
                                                                     "pid": os.getpid()})
        sess["open_txn"] = True

    def _end_transaction(self):
        sess = self.state["sessions"].get(str(self.s.spid), {})
        if sess.get("snapshot_txn"):  # the versions this transaction pinned are released
            for t in V.tables(self.state["databases"].get(self.s.database) or {}).values():
                if t.get("held"):
                    t["held"] = 0
        sess["snapshot_txn"] = False
        sess["open_txn"] = False

    def do_commit(self, st):
        if self.s.trancount == 0:
            raise self.err(3902, "The COMMIT TRANSACTION request has no corresponding BEGIN TRANSACTION.")
        self.s.trancount -= 1
        if self.s.trancount == 0:
            self._end_transaction()

    def do_rollback(self, st):
        if self.s.trancount == 0:
            raise self.err(3903, "The ROLLBACK TRANSACTION request has no corresponding BEGIN TRANSACTION.")
        self.s.trancount = 0
        self._end_transaction()

    def do_throw(self, st):
        args = [self.eval(a, _Env([], {})) for a in st.data["args"]]
        if len(args) != 3:
            raise self.err(102, "Incorrect syntax near 'THROW'.")
        raise S.sql_error(int(args[0]), str(args[1]), "42000", 16)

    def do_waitfor(self, st):
        pass  # the simulator does not sleep: nothing works meanwhile, so no statistic moves

    def do_checkpoint(self, st):
        pass

    def db(self) -> dict:
        return S._current(self.state, self.s)

    def do_drop_table(self, st):
        for name in st.data["names"]:
            if name.startswith("#"):
                if self.s.temp.pop(name.lower(), None) is None and not st.data["if_exists"]:
                    raise self.err(3701, f"Cannot drop the table '{name}', because it does not exist or you do not "
                                         "have permission.")
                continue
            found = V.find_table(self.db(), name)
            if found is None:
                if not st.data["if_exists"]:
                    raise self.err(3701, f"Cannot drop the table '{name}', because it does not exist or you do not "
                                         "have permission.")
                continue
            db = self.db()
            db["xtp_bytes"] = max(0, db.get("xtp_bytes", 0) - found[1].get("xtp_bytes", 0))
            del db["tables"][found[0]]

    def do_truncate(self, st):
        found = V.find_table(self.db(), st.data["name"])
        if found is None:
            raise self.err(4701, f'Cannot find the object "{st.data["name"]}" because it does not exist or you do '
                                 "not have permissions.")
        t = found[1]
        t["rows"], t["identity"] = 0, 0
        t["data"] = []

    def do_create_table(self, st):
        name, cols = st.data["name"], st.data["columns"]
        if name.startswith("#"):
            self.s.temp[name.lower()] = {"columns": cols, "data": []}
            return
        db = self.db()
        if V.find_table(db, name) is not None:
            raise self.err(2714, f"There is already an object named '{name.split('.')[-1]}' in the database.")
        text = st.text.upper()
        if re.search(r"\bOPTIMIZE_FOR_SEQUENTIAL_KEY\b", text) and self.major < 15:
            raise self.err(155, "'OPTIMIZE_FOR_SEQUENTIAL_KEY' is not a recognized CREATE TABLE option.")
        options = " ".join(st.data["options"])
        memory_optimized = "MEMORY_OPTIMIZED" in options and re.search(r"MEMORY_OPTIMIZED\s*=\s*ON", text)
        if memory_optimized:
            if not self.state["xtp"]:
                raise self.err(40536 if S.azure(self.state) else 41342,
                               "'MEMORY_OPTIMIZED tables' is not supported in this service tier of the database.")
            if not S.has_memory_optimized_filegroup(db) and S.azure(self.state) != "mi":
                raise self.err(41337, "Cannot create memory optimized tables. To create memory optimized tables, "
                                      "the database must have a MEMORY_OPTIMIZED_FILEGROUP that is online and has "
                                      "at least one container.")
        cols = dict(cols)
        cols["__hash__"] = bool(re.search(r"\bNONCLUSTERED\s+HASH\b", text))
        cols["__nonclustered__"] = bool(re.search(r"\bPRIMARY\s+KEY\s+NONCLUSTERED\b", text))
        cols["__sequential__"] = bool(re.search(r"OPTIMIZE_FOR_SEQUENTIAL_KEY\s*=\s*ON", text))
        m = re.search(r"\bCONSTRAINT\s+\[?(\w+)\]?\s+PRIMARY\s+KEY", st.text, re.I)
        cols["__key_name__"] = m.group(1) if m else None
        short = name.replace("[", "").replace("]", "").split(".")[-1]
        table = {"columns": cols, "rows": 0, "data": [], "identity": 0, "memory_optimized": bool(memory_optimized)}
        if memory_optimized:  # 8 bytes a hash bucket, the count rounded up to a power of two (estimate page)
            buckets = sum(1 << max(0, int(b) - 1).bit_length() for b in re.findall(r"BUCKET_COUNT\s*=\s*(\d+)", text))
            S.check_xtp(self.state, db, 8 * buckets)
            table["xtp_bytes"] = 8 * buckets
        db["tables"][short] = table
        V.object_id(self.state, db, table)

    def target(self, name: str) -> tuple[str, dict]:
        low = name.lower()
        if low.startswith("@"):
            if low not in self.tvars:
                raise self.err(1087, f'Must declare the table variable "{name}".')
            return low, self.tvars[low]
        if low.startswith("#"):
            if low not in self.s.temp:
                raise self.err(208, f"Invalid object name '{name}'.")
            return low, self.s.temp[low]
        found = V.find_table(self.db(), name)
        if found is None:
            raise self.err(208, f"Invalid object name '{name}'.")
        return found

    def do_insert(self, st):
        key, t = self.target(st.data["name"])
        tcols = V.table_columns(t)
        names = st.data["columns"] or [c for c, d in tcols.items() if not d.get("identity") and
                                       d.get("type") != "computed"]
        for c in names:
            if c not in tcols:
                raise self.err(207, f"Invalid column name '{c}'.")
        counted = 0
        if "values" in st.data:
            rows = [[self.eval(e, _Env([], {})) for e in row] for row in st.data["values"]]
        else:
            _cols, rows, _a = self.query(st.data["query"], None, st.data.get("ctes"))
            if isinstance(rows, _Lazy) and len(rows) > KEEP_EVALUATED and not key.startswith(("#", "@")):
                # a table this large keeps counts only (below): the first rows are evaluated, the rest counted
                counted = len(rows) - KEEP_EVALUATED
                rows = list(itertools.islice(rows, KEEP_EVALUATED))
        for row in rows:
            if len(row) != len(names):
                raise self.err(110 if len(row) < len(names) else 109,
                               "There are fewer columns in the INSERT statement than values specified in the VALUES "
                               "clause." if len(row) > len(names) else "There are more columns in the INSERT "
                               "statement than values specified in the VALUES clause.")
            new = dict(zip(names, row))
            for c, d in tcols.items():
                if d.get("identity"):
                    t["identity"] = t.get("identity", 0) + 1
                    new[c] = t["identity"]
                    self.vars["@@identity"] = t["identity"]
                elif c not in new and d.get("type") != "computed":
                    if not d.get("nullable", True):
                        raise self.err(515, f"Cannot insert the value NULL into column '{c}', table "
                                            f"'{key}'; column does not allow nulls. INSERT fails.")
                    new[c] = None
            if "data" in t and t["data"] is not None:
                t["data"].append(new)
                if not key.startswith(("#", "@")) and len(t["data"]) > KEEP_EVALUATED:  # counts only, when large
                    del t["data"]
        n = len(rows) + counted
        if counted:
            t.pop("data", None)
            if any(d.get("identity") for d in tcols.values()):
                t["identity"] = t.get("identity", 0) + counted
                self.vars["@@identity"] = t["identity"]
        if not key.startswith(("#", "@")):
            if t.get("memory_optimized"):  # each row's bytes (estimate-memory-requirements page)
                S.check_xtp(self.state, self.db(), n * S.xtp_row_bytes(t))
                t["xtp_bytes"] = t.get("xtp_bytes", 0) + n * S.xtp_row_bytes(t)
            t["rows"] = t.get("rows", 0) + n
            t["inserted"] = t.get("inserted", 0) + n
            self.written[key] = self.written.get(key, 0) + n
            query = st.data.get("query")
            maxdop = _maxdop(query.options) if query is not None else None
            if "TABLOCK" in st.data.get("hints", []) and not t.get("columns", {}).get("__keys__") and \
                    (maxdop is None or maxdop > 1):
                # a heap filled WITH (TABLOCK) by INSERT ... SELECT may be inserted in parallel (INSERT page,
                # "Parallel inserts"); OPTION (MAXDOP 1) keeps it serial
                self.parallel[key] = self.parallel.get(key, 0) + n
        self.vars["@@rowcount"] = n

    def _dml_target(self, st) -> tuple[str, dict, str]:
        """(key, table, alias) of an UPDATE's or DELETE's one table (``UPDATE a SET ... FROM dbo.t AS a`` too)."""
        name, alias = st.data["name"], st.data["name"].split(".")[-1].lower()
        frm = st.data.get("from")
        if frm is not None:
            first, joins = frm
            if joins or first.kind != "table" or name.lower() not in (first.alias, first.name.lower()):
                raise T.Unsupported("UPDATE ... FROM with more than its own table")
            name, alias = first.name, first.alias
        key, t = self.target(name)
        return key, t, alias

    def _matching(self, t: dict, alias: str, where, top) -> tuple[list[dict], _Rowset]:
        kept = "data" in t
        rows = t["data"] if kept else V.table_rows(t)
        rs = _Rowset(alias, list(V.table_columns(t)), rows)
        blank = _Env([rs], {alias: None})
        if where is not None:
            self.eval(where, blank)
        hit = [r for r in rows if where is None or self.eval(where, _Env([rs], {alias: r})) is True]
        if top is not None:
            hit = hit[:int(self.eval(top, _Env([], {})))]
        return hit, rs

    def _cte_rows(self, name: str, q: T.Select, _cols: list) -> tuple[str, dict, str, list[dict]]:
        """The base table rows a DML statement through a common table expression touches: the CTE must read one
        table (WITH common_table_expression page: "must reference only one base table"); its WHERE, ORDER BY and
        TOP choose the rows."""
        if len(q.sources) != 1 or q.sources[0][1] or q.sources[0][0].kind != "table" or q.group or \
                any(_has_agg(e) for e, _n, _v in q.items):
            raise self.err(4405, f"View or function '{name}' is not updatable because the modification affects "
                                 "multiple base tables.")
        src = q.sources[0][0]
        key, t = self.target(src.name)
        for e, _n, _v in q.items:
            if e.op != "star":
                self.eval(e, _Env([_Rowset(src.alias, list(V.table_columns(t)), [])], {src.alias: None}))
        hit, rs = self._matching(t, src.alias, q.where, None)
        if q.order:
            for e, _d in q.order:
                self.eval(e, _Env([rs], {src.alias: None}))
            desc = [d for _e, d in q.order]
            hit = sorted(hit, key=functools.cmp_to_key(lambda a, b: _cmp_keys(
                [self.eval(e, _Env([rs], {src.alias: a})) for e, _d in q.order],
                [self.eval(e, _Env([rs], {src.alias: b})) for e, _d in q.order], desc)))
        if q.top is not None:
            hit = hit[:int(self.eval(q.top, _Env([], {})))]
        return key, t, src.alias, hit

    def do_update(self, st):
        key, t, alias = self._dml_target(st)
        cols = V.table_columns(t)
        for column, _op, _e in st.data["sets"]:
            if column not in cols:
                raise self.err(207, f"Invalid column name '{column}'.")
            if cols[column].get("identity") or cols[column].get("type") == "computed":
                raise self.err(8102 if cols[column].get("identity") else 271,
                               f"Cannot update identity column '{column}'." if cols[column].get("identity") else
                               f"The column \"{column}\" cannot be modified because it is either a computed column "
                               "or is the result of a UNION operator.")
        hit, rs = self._matching(t, alias, st.data.get("where"), st.data.get("top"))
        for _c, _op, e in st.data["sets"]:
            self.eval(e, _Env([rs], {alias: None}))
        for row in hit:
            env = _Env([rs], {alias: dict(row)})  # every SET reads the row as it was before the statement
            new = {}
            for column, op, e in st.data["sets"]:
                value = self.eval(e, env)
                new[column] = value if op == "=" else self.arith(op[0], row.get(column), value)
            row.update(new)
        if not key.startswith(("#", "@")):
            keys = t.get("columns", {}).get("__keys__") or []
            changes = self.updated.setdefault(key, {"rows": 0, "key": False})
            changes["rows"] += len(hit)
            changes["key"] = changes["key"] or any(c in keys for c, _o, _e in st.data["sets"])
        self.vars["@@rowcount"] = len(hit)

    def do_delete(self, st):
        cte = (st.data.get("ctes") or {}).get(st.data["name"].lower())
        if cte is not None:
            key, t, alias, hit = self._cte_rows(st.data["name"], *cte)
            if st.data.get("where") is not None:
                hit, _rs = self._matching({"columns": t.get("columns", {}), "data": hit}, st.data["name"].lower(),
                                          st.data["where"], None)
        else:
            key, t, alias = self._dml_target(st)
            hit, _rs = self._matching(t, alias, st.data.get("where"), None)
        if st.data.get("output"):
            cols = list(V.table_columns(t))
            deleted = _Rowset("deleted", cols, hit)
            items = st.data["output"]
            for e, _n, _v in items:
                self.eval(e, _Env([deleted], {"deleted": None}))
            self.results.append(([n or "" for _e, n, _v in items],
                                 [tuple(self.eval(e, _Env([deleted], {"deleted": r})) for e, _n, _v in items)
                                  for r in hit]))
        if "data" in t:
            ids = {id(r) for r in hit}
            t["data"] = [r for r in t["data"] if id(r) not in ids]
        if not key.startswith(("#", "@")):
            t["rows"] = max(0, t.get("rows", 0) - len(hit))
            t["deleted"] = t.get("deleted", 0) + len(hit)
        self.vars["@@rowcount"] = len(hit)

    def do_delegate(self, st):
        """ALTER DATABASE, DBCC, DROP PARTITION: answered by the server's handlers for the statement itself."""
        sets, _msgs = S.execute(self.state, self.s, st.text.rstrip("; \n"), (), delegated=True)
        self.results += sets

    def do_exec(self, st):
        name = st.data["name"]
        if name.lower() in ("sys.sp_executesql", "sp_executesql"):
            if not st.data["args"]:
                raise self.err(201, "Procedure or function 'sp_executesql' expects parameter '@stmt', which was "
                                    "not supplied.")
            text = self.eval(st.data["args"][0][1], _Env([], {}))
            if len(st.data["args"]) > 1:
                raise T.Unsupported("sp_executesql with parameters")
            sets, _msgs = S.execute(self.state, self.s, str(text), ())
            self.results += sets
            return
        db = self.db()
        short = name.replace("[", "").replace("]", "").split(".")[-1]
        proc = next((p for k, p in db.get("procedures", {}).items() if k.lower() == short.lower()), None)
        if proc is None or name.lower().startswith("sys."):
            raise self.err(2812, f"Could not find stored procedure '{name}'.")
        values = []
        for i, (param, expr, _out) in enumerate(st.data["args"]):
            if param is not None and param not in proc["params"]:
                raise self.err(8145, f"{param} is not a parameter for procedure {short}.")
            if param is None and i >= len(proc["params"]):
                raise self.err(8144, f"Procedure or function {short} has too many arguments specified.")
            values.append(self.eval(expr, _Env([], {})))
        self.executed.append((short, values))

    def do_create_procedure(self, st):
        db = self.db()
        procs = db.setdefault("procedures", {})
        short = st.data["name"].replace("[", "").replace("]", "").split(".")[-1]
        if short in procs and not st.data["or_alter"]:
            raise self.err(2714, f"There is already an object named '{short}' in the database.")
        body = st.data["body"]
        procs[short] = {"params": st.data["params"],
                        "native": bool(re.search(r"\bNATIVE_COMPILATION\b", body, re.I)),
                        "writes": sorted({m.lower() for m in re.findall(
                            r"\b(?:INSERT\s+(?:INTO\s+)?|UPDATE\s+)(?:dbo\.)?\[?(\w+)\]?", body, re.I)}),
                        "calls": sorted({m.lower() for m in re.findall(r"\bEXEC(?:UTE)?\s+(?:dbo\.)?(\w+)", body,
                                                                      re.I)}),
                        "sequence": bool(re.search(r"\bNEXT\s+VALUE\s+FOR\b", body, re.I))}

    def do_drop_object(self, st):
        db = self.db()
        what = st.data["what"]
        store = db.setdefault("procedures" if what == "PROCEDURE" else "sequences", {})
        short = st.data["name"].replace("[", "").replace("]", "").split(".")[-1]
        key = next((k for k in store if k.lower() == short.lower()), None)
        if key is None:
            if not st.data["if_exists"]:
                raise self.err(3701, f"Cannot drop the {what.lower()} '{st.data['name']}', because it does not "
                                     "exist or you do not have permission.")
            return
        del store[key]

    def do_create_sequence(self, st):
        store = self.db().setdefault("sequences", {})
        short = st.data["name"].replace("[", "").replace("]", "").split(".")[-1]
        if short in store:
            raise self.err(2714, f"There is already an object named '{short}' in the database.")
        store[short] = {"next": 0}

    def create_temp(self, name: str, cols: list[str], rows: list) -> None:
        low = name.lower()
        if not low.startswith("#"):
            raise T.Unsupported(f"SELECT ... INTO {name}")
        if low in self.s.temp:
            raise self.err(2714, f"There is already an object named '{name}' in the database.")
        if any(not c for c in cols):
            raise self.err(1038, "An object or column name is missing or empty.")
        self.s.temp[low] = {"columns": {c.lower(): {"type": "sql_variant"} for c in cols},
                            "data": [dict(zip([c.lower() for c in cols], r)) for r in rows]}

    # -- queries
    def bind_source(self, src: T.Source, env: _Env, ctes: dict) -> _Rowset:
        name = src.name.lower()
        if src.kind == "values":
            rows = [[self.eval(e, env) for e in row] for row in src.args]
            return _Rowset(src.alias, src.columns, [dict(zip(src.columns, r)) for r in rows])
        if src.kind == "sub":
            cols, rows, _a = self.query(src.query, env)
            cols = src.columns or [c.lower() for c in cols]
            return _Rowset(src.alias, cols, _as_dicts(cols, rows))
        if name in ctes:
            q, cols = ctes[name]
            qcols, rows, _a = self.query(q, env, ctes)
            cols = cols or [c.lower() for c in qcols]
            return _Rowset(src.alias, cols, _as_dicts(cols, rows))
        if name.startswith("sys.") or name.split(".", 1)[-1].startswith("sys."):
            name = "sys." + name.split("sys.", 1)[1]
            entry = Q.catalogue()["objects"].get(name)
            if entry is None:
                raise self.err(208, f"Invalid object name '{src.name}'.")
            cols = [c for c, d in entry["columns"].items() if S.azure(self.state) or self.major >= d.get("since", 0)]
            args = [self.eval(a, env) for a in src.args]
            return _Rowset(src.alias, cols, V.rows(self.state, self.s, name, args))
        if src.kind == "tvf":
            raise T.Unsupported(f"the table-valued function {src.name}")
        _key, t = self.target(src.name)
        cols = list(V.table_columns(t))
        if "data" not in t and t.get("rows", 0) > EAGER_ROWS:  # counted only: its rows made as they are read
            rows = _Lazy(lambda: V.table_rows(t, lazy=True), t["rows"])
        else:
            rows = V.table_rows(t) if "data" in t or "rows" in t else list(t.get("data", []))
        if not name.startswith(("#", "@")):
            self.read_user_table(t)
        return _Rowset(src.alias, cols, rows)

    def read_user_table(self, t: dict) -> None:
        """A read inside an open transaction under READ_COMMITTED_SNAPSHOT reads row versions: the transaction is
        an active snapshot transaction (sys.dm_tran_active_snapshot_database_transactions)."""
        if self.s.trancount > 0 and self.db().get("rcsi"):
            sess = self.state["sessions"].setdefault(str(self.s.spid), {"database": self.s.database,
                                                                         "pid": os.getpid()})
            sess["snapshot_txn"] = True

    def frames(self, q: T.Select, env: _Env | None) -> tuple[list[_Rowset], list[dict]]:
        sources: list[_Rowset] = []
        frames: list[dict] = [{}]
        for first, joins in q.sources:
            rs = self.bind_source(first, _Env(sources, {}, env), q.ctes)
            self._add(sources, rs)
            frames = _cross(frames, rs.alias, rs.rows)
            for j in joins:
                if j.kind in ("apply", "outer_apply"):
                    out = []
                    bound = None
                    for f in frames:
                        bound = self.bind_source(j.source, _Env(sources, f, env), q.ctes)
                        rows = bound.rows
                        if not rows and j.kind == "outer_apply":
                            out.append(dict(f, **{bound.alias: None}))
                        out += [dict(f, **{bound.alias: r}) for r in rows]
                    if bound is None:  # no outer row: bind once for the columns, with NULL arguments
                        bound = self.bind_source(j.source, _Env(sources, {s.alias: None for s in sources}, env),
                                                 q.ctes)
                    self._add(sources, bound)
                    frames = out
                    continue
                rs = self.bind_source(j.source, _Env(sources, {}, env), q.ctes)
                self._add(sources, rs)
                if j.on is not None:
                    self.eval(j.on, _Env(sources, {s.alias: None for s in sources}, env))  # binds the names
                if j.kind == "cross" or (j.kind == "left" and not rs.rows):  # a LEFT JOIN to no rows keeps every row
                    frames = _cross(frames, rs.alias, rs.rows or [None])
                    continue
                out = []
                for f in frames:
                    matched = False
                    for r in rs.rows:
                        nf = dict(f, **{rs.alias: r})
                        if j.on is None or self.eval(j.on, _Env(sources, nf, env)) is True:
                            out.append(nf)
                            matched = True
                    if not matched and j.kind == "left":
                        out.append(dict(f, **{rs.alias: None}))
                frames = out
        return sources, frames

    def _add(self, sources: list[_Rowset], rs: _Rowset) -> None:
        if any(x.alias == rs.alias for x in sources):
            raise self.err(1011, f"The correlation name '{rs.alias}' is specified multiple times in a FROM clause.")
        sources.append(rs)

    def query(self, q: T.Select, env: _Env | None, ctes: dict | None = None):
        """(column names, rows as lists, variables assigned or None)."""
        if ctes and not q.ctes:
            q.ctes = ctes
        sources, frames = self.frames(q, env)
        blank = _Env(sources, {s.alias: None for s in sources}, env)
        if q.where is not None:
            self.eval(q.where, blank)  # binds every name, also when no row is there to test
            frames = [f for f in frames if self.eval(q.where, _Env(sources, f, env)) is True]
        aggregate = bool(q.group) or any(_has_agg(e) for e, _n, _v in q.items) or \
            (q.having is not None and _has_agg(q.having))
        if aggregate:
            groups: dict = {}
            for g in q.group:
                self.eval(g, blank)
            if not q.group:  # one group of every row (a large table's rows are counted, not built: aggregate)
                groups[()] = frames
            for f in frames if q.group else ():
                key = tuple(_key(self.eval(g, _Env(sources, f, env))) for g in q.group)
                groups.setdefault(key, []).append(f)
            envs = [_Env(sources, next(iter(fs), blank.frame), env, group=fs) for fs in groups.values()]
            if q.having is not None:
                envs = [e for e in envs if self.eval(q.having, e) is True]
        else:
            envs = _Lazy(lambda: (_Env(sources, f, env) for f in frames), len(frames)) \
                if isinstance(frames, _Lazy) else [_Env(sources, f, env) for f in frames]
        items = []
        for e, name, var in q.items:
            if e.op == "star":
                for s in sources:
                    if not e.name or e.name.split(".")[-1] == s.alias:
                        items += [(T.Node("col", [s.alias, c], f"{s.alias}.{c}"), c, None) for c in s.columns]
            else:
                items.append((e, name, var))
        windows = [w for e, _n, _v in items for w in _windows(e)]
        for w in windows:
            self.bind_window(w, _Env(sources, blank.frame, env))
        binding = _Env(sources, blank.frame, env, group=[] if aggregate else None)
        binding.window = {id(w): None for w in windows}
        for e, _n, _v in items:
            self.eval(e, binding)
        names = [n or "" for _e, n, _v in items]
        if isinstance(envs, _Lazy) and not q.order and all(_arrival_order(w) for w in windows):
            lazy = envs

            def produce():
                for i, en in enumerate(lazy):
                    en.window = {id(w): i + 1 for w in windows}
                    yield [self.eval(e, en) for e, _n, _v in items]
            rows = _Lazy(produce, len(envs))
            if q.top is not None:
                rows = _top(rows, self.eval(q.top, _Env([], {}, env)))
            return names, rows, self.assigned(items)
        envs = list(envs)
        for w in windows:
            self.number_rows(w, envs)
        out = []
        for en in envs:
            row = [self.eval(e, en) for e, _n, _v in items]
            out.append((row, en))
        if q.order:
            outputs_blank = {n.lower(): None for n in names if n}
            for e, _d in q.order:
                self.eval(e, _Env(sources, blank.frame, env, group=[] if aggregate else None, outputs=outputs_blank))
            keyed = []
            for row, en in out:
                outs = {n.lower(): v for n, v in zip(names, row) if n}
                ctx = _Env(en.sources, en.frame, en.outer, en.group, outs)
                keyed.append(([self.eval(e, ctx) for e, _d in q.order], row))
            desc = [d for _e, d in q.order]
            keyed.sort(key=functools.cmp_to_key(lambda a, b: _cmp_keys(a[0], b[0], desc)))
            rows = [r for _k, r in keyed]
        else:
            rows = [r for r, _en in out]
        if q.top is not None:
            rows = _top(rows, self.eval(q.top, _Env([], {}, env)))
        return names, rows, self.assigned(items)

    def assigned(self, items) -> list | None:
        """The variables a SELECT assigns (``SELECT @v = ...``), or None for a SELECT that returns rows."""
        assigns = [v for _e, _n, v in items]
        if any(assigns):
            if not all(assigns):
                raise self.err(141, "A SELECT statement that assigns a value to a variable must not be combined "
                                    "with data-retrieval operations.")
            return assigns
        return None

    # -- window functions (OVER clause page: t-sql/queries/select-over-clause-transact-sql)
    def bind_window(self, w: T.Node, blank: _Env) -> None:
        if w.name != "ROW_NUMBER":
            raise T.Unsupported(f"the window function {w.name}()")
        args, partition, order = w.args
        if args:
            raise self.err(174, f"The {w.name.lower()} function requires 0 argument(s).")
        if not order:
            raise self.err(4112, f"The function '{w.name}' must have an OVER clause with ORDER BY.")
        for e in partition + [e for e, _d in order]:
            self.eval(e, blank)

    def number_rows(self, w: T.Node, envs: list) -> None:
        """ROW_NUMBER(): 1, 2, ... within each partition, in the OVER clause's order (ties in arrival order)."""
        _args, partition, order = w.args
        keyed = [([_key(self.eval(p, en)) for p in partition], [self.eval(e, en) for e, _d in order], i)
                 for i, en in enumerate(envs)]
        desc = [d for _e, d in order]
        keyed.sort(key=functools.cmp_to_key(lambda a, b: (_cmp_keys(a[0], b[0], [False] * len(a[0]))
                                                          or _cmp_keys(a[1], b[1], desc) or a[2] - b[2])))
        counts: dict = {}
        for part, _o, i in keyed:
            k = tuple(part)
            counts[k] = counts.get(k, 0) + 1
            envs[i].window = {**(envs[i].window or {}), id(w): counts[k]}

    # -- expressions
    def lookup(self, node: T.Node, env: _Env) -> Any:
        parts = node.args
        col = parts[-1]
        if len(parts) == 1 and env.outputs is not None and col in env.outputs:
            return env.outputs[col]
        e = env
        while e is not None:
            if len(parts) >= 2:
                alias = parts[-2]
                src = next((s for s in e.sources if s.alias == alias), None)
                if src is not None:
                    if col not in src.colset:
                        raise self.err(207, f"Invalid column name '{col}'.")
                    row = e.frame.get(alias)
                    return None if row is None else row.get(col)
            else:
                found = [s for s in e.sources if col in s.colset]
                if len(found) > 1:
                    raise self.err(209, f"Ambiguous column name '{col}'.")
                if found:
                    row = e.frame.get(found[0].alias)
                    return None if row is None else row.get(col)
            e = e.outer
        if len(parts) >= 2:
            raise self.err(4104, f'The multi-part identifier "{node.name}" could not be bound.')
        raise self.err(207, f"Invalid column name '{col}'.")

    def eval(self, node: T.Node, env: _Env) -> Any:
        op = node.op
        if op == "lit":
            return node.args[0]
        if op == "param":
            i = node.args[0]
            if i >= len(self.params):
                raise S.SimError("07002", f"COUNT field incorrect: the batch has a marker ?{i + 1} and "
                                          f"{len(self.params)} parameter(s)")
            return self.params[i]
        if op == "var":
            return self.variable(node.name)
        if op == "col":
            return self.lookup(node, env)
        if op == "bin":
            if node.name == "AND":
                a = self.eval(node.args[0], env)
                b = self.eval(node.args[1], env)
                return False if a is False or b is False else (None if a is None or b is None else True)
            if node.name == "OR":
                a = self.eval(node.args[0], env)
                b = self.eval(node.args[1], env)
                return True if a is True or b is True else (None if a is None or b is None else False)
            a, b = self.eval(node.args[0], env), self.eval(node.args[1], env)
            if node.name in ("=", "<>", "<", ">", "<=", ">="):
                c = _compare(a, b)
                if c is None:
                    return None
                return {"=": c == 0, "<>": c != 0, "<": c < 0, ">": c > 0, "<=": c <= 0, ">=": c >= 0}[node.name]
            return self.arith(node.name, a, b)
        if op == "un":
            v = self.eval(node.args[0], env)
            if node.name == "NOT":
                return None if v is None else not v
            return None if v is None else -v
        if op == "isnull":
            return self.eval(node.args[0], env) is None
        if op == "like":
            v, p = self.eval(node.args[0], env), self.eval(node.args[1], env)
            return None if v is None or p is None else bool(_like(str(p)).match(str(v)))
        if op == "in":
            v = self.eval(node.args[0], env)
            if len(node.args) == 2 and node.args[1].op == "sub":
                _c, rows, _a = self.query(node.args[1].args[0], env)
                values = [r[0] for r in rows]
            else:
                values = [self.eval(x, env) for x in node.args[1:]]
            if v is None:
                return None
            return any(_compare(v, x) == 0 for x in values if x is not None)
        if op == "between":
            v, lo, hi = (self.eval(x, env) for x in node.args)
            a, b = _compare(v, lo), _compare(v, hi)
            return None if a is None or b is None else a >= 0 and b <= 0
        if op == "case":
            subject, whens, other = node.args
            sv = self.eval(subject, env) if subject is not None else None
            for cond, value in whens:
                hit = _compare(sv, self.eval(cond, env)) == 0 if subject is not None else self.eval(cond, env) is True
                if hit:
                    return self.eval(value, env)
            return self.eval(other, env)
        if op == "cast":
            return _cast(self.eval(node.args[0], env), node.name)
        if op == "sub":
            _c, rows, _a = self.query(node.args[0], env)
            rows = list(itertools.islice(rows, 2))
            if len(rows) > 1:
                raise self.err(512, "Subquery returned more than 1 value. This is not permitted when the subquery "
                                    "follows =, !=, <, <= , >, >= or when the subquery is used as an expression.")
            return rows[0][0] if rows else None
        if op == "exists":
            _c, rows, _a = self.query(node.args[0], env)
            return bool(rows)
        if op == "agg":
            return self.aggregate(node, env)
        if op == "fn":
            return self.function(node, env)
        if op == "window":
            numbers = env.window
            if numbers is None or id(node) not in numbers:
                raise self.err(4108, "Windowed functions can only appear in the SELECT or ORDER BY clauses.")
            return numbers[id(node)]
        if op == "star":
            raise T.Unsupported("* outside COUNT(*) and a select list")
        raise T.Unsupported(f"expression {op}")

    def variable(self, name: str) -> Any:
        if name.startswith("@@"):
            return {"@@SPID": self.s.spid, "@@TRANCOUNT": self.s.trancount, "@@ROWCOUNT": self.vars["@@rowcount"],
                    "@@VERSION": S.version_text(self.state)}.get(name) if name in (
                "@@SPID", "@@TRANCOUNT", "@@ROWCOUNT", "@@VERSION") else _raise(T.Unsupported(name))
        if name not in self.vars:
            raise self.err(137, f'Must declare the scalar variable "{name}".')
        return self.vars[name]

    def arith(self, op: str, a, b):
        if a is None or b is None:
            return None
        if op == "+" and (isinstance(a, str) or isinstance(b, str)):
            return str(a) + str(b)
        if op == "+":
            return a + b
        if op == "-":
            return a - b
        if op == "*":
            return a * b
        if op in ("/", "%"):
            if b == 0:
                raise self.err(8134, "Divide by zero error encountered.")
            if isinstance(a, int) and isinstance(b, int):
                q = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)  # integer division truncates
                return q if op == "/" else a - q * b
            return a / b if op == "/" else a % b
        raise T.Unsupported(f"operator {op}")

    def aggregate(self, node: T.Node, env: _Env):
        if env.group is None:
            raise self.err(147, "An aggregate may not appear in the WHERE clause unless it is in a subquery "
                                "contained in a HAVING clause or a select list.")
        star = node.args and node.args[0].op == "star"
        if star and node.name in ("COUNT", "COUNT_BIG"):
            return len(env.group)
        values = []
        for f in env.group:
            e = _Env(env.sources, f, env.outer)
            values.append(1 if star else self.eval(node.args[0], e))
        if not env.group and not star and node.args:
            self.eval(node.args[0], _Env(env.sources, env.frame, env.outer))  # binds the names
        present = [v for v in values if v is not None]
        if node.name in ("COUNT", "COUNT_BIG"):
            return len(present)
        if not present:
            return None
        if node.name == "MAX":
            return functools.reduce(lambda x, y: y if _compare(y, x) > 0 else x, present)
        if node.name == "MIN":
            return functools.reduce(lambda x, y: y if _compare(y, x) < 0 else x, present)
        if node.name == "SUM":
            return sum(present)
        if node.name == "AVG":
            total = sum(present)
            return total // len(present) if all(isinstance(v, int) for v in present) else total / len(present)
        raise T.Unsupported(node.name)

    def function(self, node: T.Node, env: _Env):
        name = node.name.split(".")[-1]
        if name in ("DATEDIFF", "DATEDIFF_BIG", "DATEADD", "DATEPART"):
            part = node.args[0].name if node.args[0].op == "col" else str(self.eval(node.args[0], env))
            args = [part.upper()] + [self.eval(a, env) for a in node.args[1:]]
        else:
            args = [self.eval(a, env) for a in node.args]
        st, db = self.state, self.db_or_none()
        if name == "DB_ID":
            if not args:
                return db["id"] if db else None
            d = st["databases"].get(args[0]) if args[0] is not None else None
            return d["id"] if d else None
        if name == "DB_NAME":
            if not args:
                return self.s.database
            return next((n for n, d in st["databases"].items() if d["id"] == args[0]), None)
        if name == "OBJECT_ID":
            if args[0] is None or db is None:
                return None
            text = str(args[0])
            if text.startswith("#"):
                return 0x7FFF0000 + len(text) if text.lower() in self.s.temp else None
            found = V.find_table(db, text)
            return V.object_id(st, db, found[1]) if found else None
        if name in ("OBJECT_NAME", "OBJECT_SCHEMA_NAME", "OBJECTPROPERTY"):
            oid = args[0]
            home = db
            if name != "OBJECTPROPERTY" and len(args) > 1 and args[1] is not None:
                home = next((d for d in st["databases"].values() if d["id"] == args[1]), None)
            hit = None
            for k, t in V.tables(home or {}).items():
                if t.get("object_id") == oid:
                    hit = k
            if name == "OBJECT_NAME":
                return hit
            if name == "OBJECT_SCHEMA_NAME":
                return "dbo" if hit else None
            if str(args[1]).lower() == "isusertable":
                return None if hit is None else 1
            raise T.Unsupported(f"OBJECTPROPERTY(..., {args[1]!r})")
        if name == "FILEGROUP_NAME":
            return next((n for i, n, _t, _d in V.filegroups(db or {}) if i == args[0]), None)
        if name == "SERVERPROPERTY":
            prop = str(args[0])
            if prop == "InstanceDefaultDataPath":
                return V.DATA_PATH
            if prop == "ProductVersion":
                return S.VERSIONS[st["version"]]["ProductVersion"]
            raise T.Unsupported(f"SERVERPROPERTY('{prop}')")
        if name in ("SYSDATETIME", "SYSUTCDATETIME", "GETDATE", "GETUTCDATE", "SYSDATETIMEOFFSET"):
            return _dt.datetime.now()
        if name == "DATEADD":
            part, n, d = args
            if n is None or d is None:
                return None
            scale = {"MICROSECOND": 1e-6, "MILLISECOND": 1e-3, "SECOND": 1, "MINUTE": 60, "HOUR": 3600, "DAY": 86400}
            if part not in scale:
                raise T.Unsupported(f"DATEADD({part}, ...)")
            return _as_datetime(d) + _dt.timedelta(seconds=int(n) * scale[part])
        if name in ("DATEDIFF", "DATEDIFF_BIG"):
            part, a, b = args
            if a is None or b is None:
                return None
            seconds = (_as_datetime(b) - _as_datetime(a)).total_seconds()
            scale = {"MICROSECOND": 1e6, "MILLISECOND": 1e3, "SECOND": 1, "MINUTE": 1 / 60, "HOUR": 1 / 3600}
            return int(seconds * scale[part])
        if name == "SCOPE_IDENTITY":
            return self.vars.get("@@identity")
        if name == "SUSER_SNAME":
            return "sa" if S.is_sysadmin(st) else "reader"
        if name in ("RTRIM", "LTRIM", "UPPER", "LOWER", "LEN"):
            v = args[0]
            if v is None:
                return None
            v = str(v)
            return {"RTRIM": v.rstrip(" "), "LTRIM": v.lstrip(" "), "UPPER": v.upper(), "LOWER": v.lower(),
                    "LEN": len(v.rstrip(" "))}[name]
        if name in ("LEFT", "RIGHT"):
            v, n = args
            if v is None or n is None:
                return None
            return str(v)[:int(n)] if name == "LEFT" else str(v)[-int(n):] if int(n) else ""
        if name == "REPLICATE":
            return None if None in args else str(args[0]) * int(args[1])
        if name == "REPLACE":
            return None if None in args else str(args[0]).replace(str(args[1]), str(args[2]))
        if name in ("ISNULL", "COALESCE"):
            return next((a for a in args if a is not None), None)
        if name == "NULLIF":
            return None if _compare(args[0], args[1]) == 0 else args[0]
        if name == "ABS":
            return None if args[0] is None else abs(args[0])
        raise T.Unsupported(f"the function {node.name}()")

    def db_or_none(self) -> dict | None:
        return self.state["databases"].get(self.s.database)


def _raise(exc):
    raise exc


def _as_dicts(cols: list[str], rows):
    if isinstance(rows, _Lazy):
        return _Lazy(lambda: (dict(zip(cols, r)) for r in rows), len(rows))
    return [dict(zip(cols, r)) for r in rows]


def _windows(node) -> list:
    """The window function calls in an expression (not inside its subqueries)."""
    if isinstance(node, T.Node):
        if node.op == "window":
            return [node]
        if node.op in ("sub", "exists"):
            return []
        return [w for a in node.args for w in _windows(a)]
    if isinstance(node, (list, tuple)):
        return [w for a in node for w in _windows(a)]
    return []


def _constant(node) -> bool:
    """An expression that is the same for every row (no column; a subquery that reads no table)."""
    if isinstance(node, T.Node):
        if node.op in ("col", "star", "agg", "window"):
            return False
        if node.op in ("sub", "exists"):
            q = node.args[0]
            return not q.sources and all(_constant(e) for e, _n, _v in q.items)
        return all(_constant(a) for a in node.args)
    if isinstance(node, (list, tuple)):
        return all(_constant(a) for a in node)
    return True


def _arrival_order(w: T.Node) -> bool:
    """A ROW_NUMBER() with no partition, ordered by a constant (``ORDER BY (SELECT NULL)``, ``@@SPID``): the
    numbering is the rows' order of arrival, so rows can be numbered as they are produced."""
    _args, partition, order = w.args
    return not partition and all(_constant(e) for e, _d in order)


def _as_datetime(v):
    """A date and time from a datetime or a string in the unseparated (style 112, 'yyyymmdd') or ISO 8601 form
    (CAST and CONVERT page); any other string is Msg 241."""
    if not isinstance(v, str):
        return v
    for fmt in ("%Y%m%d", "%Y-%m-%d", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S.%f",
                "%Y-%m-%d %H:%M:%S.%f"):
        try:
            return _dt.datetime.strptime(v.strip(), fmt)
        except ValueError:
            continue
    raise S.sql_error(241, "Conversion failed when converting date and/or time from character string.")


def _maxdop(options: list[str]) -> int | None:
    """The MAXDOP of an OPTION clause's words (["MAXDOP", "4"]), or None when it sets none."""
    for i, word in enumerate(options[:-1]):
        if word == "MAXDOP" and options[i + 1].isdigit():
            return int(options[i + 1])
    return None


def _has_agg(node) -> bool:
    if isinstance(node, T.Node):
        if node.op == "agg":
            return True
        if node.op in ("sub", "exists"):
            return False
        return any(_has_agg(a) for a in node.args)
    if isinstance(node, (list, tuple)):
        return any(_has_agg(a) for a in node)
    return False


def _key(v):
    return v.casefold().rstrip() if isinstance(v, str) else v


def _compare(a, b) -> int | None:
    if a is None or b is None:
        return None
    if isinstance(a, str) and isinstance(b, str):
        a, b = a.casefold().rstrip(" "), b.casefold().rstrip(" ")  # the default collation: case-insensitive
    elif isinstance(a, str) != isinstance(b, str):
        try:  # the string is converted to the number's type (data type precedence)
            a, b = (float(a), b) if isinstance(a, str) else (a, float(b))
        except ValueError:
            raise S.sql_error(245, f"Conversion failed when converting the varchar value '{a if isinstance(a, str) else b}'"
                                   " to data type int.") from None
    return (a > b) - (a < b)


def _cmp_keys(a: list, b: list, desc: list) -> int:
    for x, y, d in zip(a, b, desc):
        if x is None and y is None:
            continue
        c = -1 if x is None else 1 if y is None else _compare(x, y)  # NULL sorts first ascending
        if c:
            return -c if d else c
    return 0


@functools.lru_cache(maxsize=256)
def _like(pattern: str) -> re.Pattern:
    """T-SQL LIKE: % any string, _ one character, [abc] / [^abc] a class ([_] a literal underscore)."""
    out, i = "", 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "%":
            out += ".*"
        elif ch == "_":
            out += "."
        elif ch == "[":
            j = pattern.find("]", i + 1)
            if j < 0:
                out += re.escape(ch)
            else:
                body = pattern[i + 1:j]
                neg = body.startswith("^")
                body = body[1:] if neg else body
                out += "[" + ("^" if neg else "") + "".join(re.escape(c) if c != "-" else "-" for c in body) + "]"
                i = j
        else:
            out += re.escape(ch)
        i += 1
    return re.compile(out + r" *\Z", re.S | re.I)


def _cast(v, typ: str):
    if v is None:
        return None
    base = typ.split("(")[0]
    if base in ("int", "integer", "bigint", "smallint", "tinyint", "bit"):  # integer: the ISO synonym of int
        if isinstance(v, str):
            v = float(v)
        return int(v) if base != "bit" else int(bool(v))
    if base in ("float", "real"):
        return float(v)
    if base in ("decimal", "numeric"):
        m = re.search(r"\(\s*\d+\s*,\s*(\d+)\s*\)", typ)
        return round(float(v), int(m.group(1)) if m else 0)
    if base in ("nvarchar", "varchar", "char", "nchar", "sysname", "xml"):
        return str(v)
    if base.startswith("datetime") or base == "date":
        return _as_datetime(v)
    raise T.Unsupported(f"CAST to {typ}")


def run(state: dict, s, sql: str, params: tuple) -> tuple[list, dict]:
    """(result sets, rows written per user table) of one batch, or tsql.Unsupported / SyntaxProblem from the parse."""
    stmts = parsed(sql)
    b = Batch(state, s, params)
    return b.run(stmts), {"inserted": b.written, "updated": b.updated, "executed": b.executed,
                          "parallel": b.parallel}
