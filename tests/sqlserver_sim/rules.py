"""The simulator judges T-SQL by documented rule, not by its text: each batch is checked before it is answered.

A batch the harness sends is first matched against these rules, each taken from a Microsoft Learn page and
raising the error that page (or the error-number tables) gives; only then is it answered as a known batch.
So T-SQL that parses but that a server would reject fails here too, and the batches shipped in
``workloads/*/sqlserver/`` are checked against every rule (tests/test_sqlserver_sim_rules.py).

This is a rule checker over normalised text (comments out, whitespace collapsed, string literals blanked),
not a T-SQL parser: it finds the constructs each rule names.  What it cannot see, it does not judge.

Pages (https://learn.microsoft.com/sql/ unless a full address is given):

- NATIVE: relational-databases/in-memory-oltp/supported-features-for-natively-compiled-t-sql-modules
- NOT_SUPPORTED: relational-databases/in-memory-oltp/transact-sql-constructs-not-supported-by-in-memory-oltp
  ("Most unsupported features will return error 10794")
- ATOMIC: relational-databases/in-memory-oltp/atomic-blocks-in-native-procedures (exactly one ATOMIC block;
  TRANSACTION ISOLATION LEVEL and LANGUAGE required; DATEFORMAT, DATEFIRST, DELAYED_DURABILITY optional)
- CREATE_PROC: t-sql/statements/create-procedure-transact-sql (NATIVE_COMPILATION needs SCHEMABINDING)
- CREATE_TABLE: t-sql/statements/create-table-transact-sql (hash indexes need BUCKET_COUNT)
- ERRORS_10000, ERRORS_12000: relational-databases/errors-events/database-engine-events-and-errors-10000-to-10999
  and -11000-to-12999 (10772, 10787, 10794; 12306, 12309, 12310, 12317, 12319, 12322, 12326, 12331, 12340,
  12342), ERRORS_0: ...-0-to-999 (226)
- IN_TRANSACTION: https://learn.microsoft.com/previous-versions/sql/sql-server-2008-r2/ms191544(v=sql.105)
  ("Transact-SQL Statements Allowed in Transactions")
- EXCLUSIVE: t-sql/statements/alter-database-transact-sql-set-options and
  relational-databases/accelerated-database-recovery-management (enforced in server.exclusive_access, which
  needs the sessions, so it is listed here and checked there)

``INSERT ... DEFAULT VALUES`` inside a natively compiled procedure is not among NATIVE's supported DML ("INSERT
VALUES (one row per statement) and INSERT ... SELECT"), so it is refused (issue 33, defect 3), although the LMAX
article ran it (seed 004); the workload uses ``INSERT ... (filler) VALUES (0)`` instead.
Error numbers marked placeholder are not on any page: docs/sqlserver-simulator.md lists them.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

LEARN = "https://learn.microsoft.com/sql/"
IMOLTP = LEARN + "relational-databases/in-memory-oltp/"
NATIVE = IMOLTP + "supported-features-for-natively-compiled-t-sql-modules"
NOT_SUPPORTED = IMOLTP + "transact-sql-constructs-not-supported-by-in-memory-oltp"
ATOMIC = IMOLTP + "atomic-blocks-in-native-procedures"
CREATE_PROC = LEARN + "t-sql/statements/create-procedure-transact-sql"
CREATE_TABLE = LEARN + "t-sql/statements/create-table-transact-sql"
ERRORS = LEARN + "relational-databases/errors-events/database-engine-events-and-errors-"
IN_TRANSACTION = "https://learn.microsoft.com/previous-versions/sql/sql-server-2008-r2/ms191544(v=sql.105)"
EXCLUSIVE = LEARN + "t-sql/statements/alter-database-transact-sql-set-options"
ADR = LEARN + "relational-databases/accelerated-database-recovery-management"


@dataclass(frozen=True)
class Rule:
    key: str
    what: str
    page: str
    error: int
    placeholder: bool = False  # the number is not given for this case on any page (see the module docstring)
    runtime: bool = False      # checked where the server's sessions are known (server.exclusive_access)


RULES: dict[str, Rule] = {r.key: r for r in (
    Rule("native.schemabinding", "a natively compiled procedure must be created WITH SCHEMABINDING", CREATE_PROC,
         10794, placeholder=True),
    Rule("native.atomic", "a natively compiled procedure's body is exactly one BEGIN ATOMIC block", ATOMIC, 10794,
         placeholder=True),
    Rule("atomic.required", "BEGIN ATOMIC requires TRANSACTION ISOLATION LEVEL and LANGUAGE", ATOMIC, 10794,
         placeholder=True),
    Rule("atomic.isolation", "an ATOMIC block's isolation level is SNAPSHOT, REPEATABLE READ or SERIALIZABLE",
         NOT_SUPPORTED, 10794),
    Rule("atomic.option", "BEGIN ATOMIC takes only TRANSACTION ISOLATION LEVEL, LANGUAGE, DATEFORMAT, DATEFIRST "
         "and DELAYED_DURABILITY", ATOMIC, 10794, placeholder=True),
    Rule("native.cursor", "cursors", NOT_SUPPORTED, 12306),
    Rule("native.multirow_insert", "INSERT ... VALUES of more than one row", NOT_SUPPORTED, 12309),
    Rule("native.cte", "common table expressions", NOT_SUPPORTED, 12310),
    Rule("native.update_from", "UPDATE with FROM, DELETE with a table source", NOT_SUPPORTED, 12319),
    Rule("native.temp_table", "temporary tables", NOT_SUPPORTED, 12322),
    Rule("native.transaction", "BEGIN / COMMIT / ROLLBACK / SAVE TRANSACTION (ATOMIC blocks control transactions)",
         NOT_SUPPORTED, 10794),
    Rule("native.dynamic_exec", "EXECUTE of a string or sp_executesql", NOT_SUPPORTED, 12340),
    Rule("native.exec_interpreted", "EXECUTE of a procedure that is not natively compiled", NOT_SUPPORTED, 12342),
    Rule("native.construct", "constructs the page lists as unsupported (SELECT INTO, MERGE, TRUNCATE TABLE, "
         "NEXT VALUE FOR, LIKE, GOTO, PRINT, RAISERROR, PIVOT, INTERSECT, EXCEPT, OFFSET, OPENROWSET, ranking "
         "functions, SET options, DDL, table hints other than INDEX / FORCESCAN / FORCESEEK)", NOT_SUPPORTED, 10794),
    Rule("native.version", "CASE and APPLY in natively compiled modules from SQL Server 2017", NATIVE, 10794),
    Rule("native.disk_table", "only memory-optimized tables can be accessed from a natively compiled module",
         NOT_SUPPORTED, 10775, placeholder=True),
    Rule("mot.clustered", "memory-optimized tables take nonclustered indexes only (PRIMARY KEY NONCLUSTERED)",
         NOT_SUPPORTED, 12317),
    Rule("mot.on", "a memory-optimized table takes no ON filegroup clause", NOT_SUPPORTED, 10794),
    Rule("mot.bucket_count", "a hash index needs BUCKET_COUNT", CREATE_TABLE, 10794, placeholder=True),
    Rule("mot.hash_order", "hash index keys take no ASC / DESC", NOT_SUPPORTED, 10787),
    Rule("mot.index_option", "BUCKET_COUNT is the only index option", NOT_SUPPORTED, 10794),
    Rule("mot.type", "data types memory-optimized tables do not support", NOT_SUPPORTED, 10794),
    Rule("mot.truncate", "TRUNCATE TABLE of a memory-optimized table", NOT_SUPPORTED, 10794),
    Rule("txn.statement", "statements not allowed in a user transaction (ALTER / CREATE / DROP DATABASE, BACKUP, "
         "RESTORE, RECONFIGURE, full-text catalogs and indexes)", IN_TRANSACTION, 226),
    Rule("txn.mo_ddl", "CREATE / ALTER / DROP of memory-optimized tables and natively compiled procedures in a "
         "user transaction", NOT_SUPPORTED, 12331),
    Rule("exclusive.rcsi", "SET READ_COMMITTED_SNAPSHOT with another connection in the database", EXCLUSIVE, 5061,
         runtime=True),
    Rule("exclusive.adr", "SET ACCELERATED_DATABASE_RECOVERY with another session in the database", ADR, 1222,
         runtime=True),
)}
MESSAGES = {
    10794: "The {construct} '{feature}' is not supported with {where}.",
    10787: "The {construct} '{feature}' is not supported with a hash index.",
    10775: "Object '{feature}' is not a memory optimized table or a natively compiled inline table-valued function "
           "and cannot be accessed from a natively compiled module.",
    12306: "Cursors are not supported with {where}.",
    12309: "Statements of the form INSERT...VALUES... that insert multiple rows are not supported with {where}.",
    12310: "Common Table Expressions (CTE) are not supported with {where}.",
    12317: "Clustered indexes, which are the default for primary keys, are not supported with {where}. Specify a "
           "NONCLUSTERED index instead.",
    12319: "Using the FROM clause in an UPDATE statement and specifying a table source in a DELETE statement is not "
           "supported with {where}.",
    12322: "Temporary tables are not supported with {where}.",
    12331: "DDL statements ALTER, DROP and CREATE inside user transactions are not supported with {where}.",
    12340: "The EXECUTE statement in {where} must use an object name. Variables and quoted identifiers are not "
           "supported.",
    12342: "The EXECUTE statement in {where} only supports executing natively compiled modules.",
    226: "{feature} statement not allowed within multi-statement transaction.",
}


@dataclass
class Context:
    """What a rule may need beyond the batch: the version and what the database holds."""

    major: int
    trancount: int = 0
    mo_tables: set = field(default_factory=set)      # "schema.name", lower case
    native_procs: set = field(default_factory=set)


@dataclass(frozen=True)
class Violation:
    rule: Rule
    message: str


def _v(key: str, construct: str = "feature", feature: str = "", where: str = "natively compiled modules") -> Violation:
    rule = RULES[key]
    text = MESSAGES.get(rule.error, "The {construct} '{feature}' is not supported with {where}.")
    return Violation(rule, text.format(construct=construct, feature=feature, where=where))


def _blank_strings(sql: str) -> str:
    return re.sub(r"N?'(?:[^']|'')*'", "''", sql)


def _name(raw: str) -> str:
    parts = [p.strip("[]").lower() for p in raw.split(".")]
    return ".".join(parts[-2:]) if len(parts) > 1 else f"dbo.{parts[0]}"


def _split_top(text: str, sep: str = ",") -> list[str]:
    out, depth, cur = [], 0, []
    for ch in text:
        depth += ch == "("
        depth -= ch == ")"
        if ch == sep and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur).strip())
    return [x for x in out if x]


def _closing(text: str, start: int) -> int:
    """Index of the parenthesis closing the one at ``start``."""
    depth = 0
    for i in range(start, len(text)):
        depth += text[i] == "("
        depth -= text[i] == ")"
        if depth == 0:
            return i
    return -1


# -- natively compiled procedures -------------------------------------------------------------------------
PROC = re.compile(r"^CREATE (?:OR ALTER )?PROC(?:EDURE)? (\S+)(.*?)(?<!EXECUTE) AS (.*)$", re.S | re.I)
ISOLATIONS = {"SNAPSHOT", "REPEATABLE READ", "REPEATABLEREAD", "SERIALIZABLE"}
ATOMIC_OPTIONS = {"TRANSACTION ISOLATION LEVEL", "LANGUAGE", "DATEFORMAT", "DATEFIRST", "DELAYED_DURABILITY"}
HINTS_OK = ("INDEX", "FORCESCAN", "FORCESEEK")
CONSTRUCTS = [  # (regex on the blanked body, construct, feature) -> native.construct (10794)
    (r"\bSELECT\b[^;]*?\bINTO\s+[@#\w.\[\]]+\s+FROM\b", "feature", "SELECT INTO"),
    (r"\bINSERT\s+(?:INTO\s+)?[\w.\[\]]+\s+DEFAULT\s+VALUES\b", "feature", "INSERT ... DEFAULT VALUES"),
    (r"\bMERGE\b", "operation", "MERGE"), (r"\bTRUNCATE\s+TABLE\b", "operation", "TRUNCATE TABLE"),
    (r"\bNEXT\s+VALUE\s+FOR\b", "operator", "NEXT VALUE FOR"), (r"\bLIKE\b", "operator", "LIKE"),
    (r"\bGOTO\b", "operator", "GOTO"), (r"\bPRINT\b", "option", "PRINT"), (r"\bRAISERROR\b", "statement", "RAISERROR"),
    (r"\b(?:UN)?PIVOT\b", "operator", "PIVOT"), (r"\bINTERSECT\b", "operator", "INTERSECT"),
    (r"\bEXCEPT\b", "operator", "EXCEPT"), (r"\bOFFSET\b", "operator", "OFFSET"),
    (r"\bOPEN(?:ROWSET|QUERY|DATASOURCE|XML)\b", "operator", "OPENROWSET"),
    (r"\b(?:ROW_NUMBER|RANK|DENSE_RANK|NTILE)\s*\(", "ranking function", "ROW_NUMBER"),
    (r"\bSET\s+(?:NOCOUNT|XACT_ABORT|ANSI_\w+|QUOTED_IDENTIFIER|ARITHABORT|TRANSACTION\s+ISOLATION|LOCK_TIMEOUT|"
     r"ROWCOUNT|IDENTITY_INSERT|DATEFORMAT|LANGUAGE|DEADLOCK_PRIORITY|STATISTICS)\b", "set option", "SET"),
    (r"\b(?:CREATE|ALTER|DROP)\s+(?:TABLE|PROC|PROCEDURE|INDEX|VIEW|FUNCTION|TYPE|SEQUENCE|SCHEMA|TRIGGER)\b",
     "feature", "DDL"),
]
TABLE_REF = re.compile(r"\b(?:FROM|JOIN|INTO|UPDATE|DELETE(?!\s+FROM))\s+((?:\[?\w+\]?\.)?\[?[#\w]+\]?)", re.I)


def _native(n: str, ctx: Context) -> list[Violation]:
    m = PROC.match(n)
    if not m or "NATIVE_COMPILATION" not in m.group(2).upper():
        return []
    header, body = m.group(2).upper(), _blank_strings(m.group(3)).strip()
    out = []
    if "SCHEMABINDING" not in header:
        out.append(_v("native.schemabinding", "option", "NATIVE_COMPILATION", "a module without SCHEMABINDING"))
    a = re.match(r"^BEGIN ATOMIC WITH \(", body, re.I)
    end = _closing(body, a.end() - 1) if a else -1
    if not a or end < 0 or not re.search(r"\bEND\s*;?\s*$", body, re.I):
        return out + [_v("native.atomic", "feature", "body without one BEGIN ATOMIC block")]
    options = {}
    for item in _split_top(body[a.end():end]):
        key, _, value = item.partition("=")
        options[re.sub(r"\s+", " ", key.strip().upper())] = value.strip().strip("'").upper().lstrip("N'")
    for key in options:
        if key not in ATOMIC_OPTIONS:
            out.append(_v("atomic.option", "option", key, "BEGIN ATOMIC"))
    for key in ("TRANSACTION ISOLATION LEVEL", "LANGUAGE"):
        if key not in options:
            out.append(_v("atomic.required", "option", f"{key} (required)", "BEGIN ATOMIC"))
    iso = options.get("TRANSACTION ISOLATION LEVEL")
    if iso is not None and iso not in ISOLATIONS:
        out.append(_v("atomic.isolation", "isolation level", iso, "natively compiled modules"))
    inner = re.sub(r"\bEND\s*;?\s*$", "", body[end + 1:], flags=re.I)
    out += _native_body(inner, ctx)
    return out


def _native_body(body: str, ctx: Context) -> list[Violation]:
    out = []
    checks = [
        (r"\bCURSOR\b", "native.cursor", "cursors"),
        (r"\bVALUES\s*\((?:[^()]|\([^()]*\))*\)\s*,\s*\(", "native.multirow_insert", "multi-row INSERT"),
        (r"(?:^|;)\s*WITH\s+\w+(?:\s*\([^)]*\))?\s+AS\s*\(", "native.cte", "CTE"),
        (r"\bUPDATE\b[^;]*?\bSET\b[^;]*?\bFROM\b|\bDELETE\s+\w[\w.\[\]]*\s+FROM\b", "native.update_from", "FROM"),
        (r"#\w+", "native.temp_table", "temporary tables"),
        (r"\bBEGIN\s+TRAN(?:SACTION)?\b|\bCOMMIT\b|\bROLLBACK\b|\bSAVE\s+TRAN(?:SACTION)?\b", "native.transaction",
         "BEGIN TRANSACTION"),
        (r"\bEXEC(?:UTE)?\s*\(|\bsp_executesql\b|\bEXEC(?:UTE)?\s+@\w+\s*;", "native.dynamic_exec", "EXECUTE"),
    ]
    for rx, key, feature in checks:
        if re.search(rx, body, re.I):
            out.append(_v(key, "feature", feature))
    for rx, construct, feature in CONSTRUCTS:
        if re.search(rx, body, re.I):
            out.append(_v("native.construct", construct, feature))
    for hint in re.findall(r"\bWITH\s*\(\s*(\w+)", body, re.I):
        if hint.upper() not in HINTS_OK:
            out.append(_v("native.construct", "table hint", hint.upper()))
    if ctx.major < 14:
        for rx, feature in ((r"\bCASE\b", "CASE"), (r"\b(?:CROSS|OUTER)\s+APPLY\b", "APPLY")):
            if re.search(rx, body, re.I):
                out.append(_v("native.version", "feature", feature))
    for raw in TABLE_REF.findall(body):
        if raw.startswith("@") or raw.startswith("#"):
            continue
        if _name(raw) not in ctx.mo_tables:
            out.append(_v("native.disk_table", feature=_name(raw)))
    for raw in re.findall(r"\bEXEC(?:UTE)?\s+(?:@\w+\s*=\s*)?([\w.\[\]]+)", body, re.I):
        if raw.lower() != "sp_executesql" and _name(raw) not in ctx.native_procs:
            out.append(_v("native.exec_interpreted", feature=_name(raw)))
    return out


# -- memory-optimized tables ----------------------------------------------------------------------------
UNSUPPORTED_TYPES = {"TEXT", "NTEXT", "IMAGE", "XML", "GEOGRAPHY", "GEOMETRY", "HIERARCHYID", "ROWVERSION",
                     "TIMESTAMP", "SQL_VARIANT"}


def _memory_optimized_tables(n: str) -> list[tuple[str, str, str]]:
    """(name, column list, tail) of each CREATE TABLE ... WITH (MEMORY_OPTIMIZED = ON) in the batch."""
    out = []
    for m in re.finditer(r"\bCREATE TABLE ([\w.\[\]]+) \(", n, re.I):
        end = _closing(n, m.end() - 1)
        if end < 0:
            continue
        tail = n[end + 1:]
        tail = tail[:re.search(r";|\bCREATE\b|\bDROP\b|\bINSERT\b|\bDECLARE\b|$", tail).start()]
        if re.search(r"MEMORY_OPTIMIZED\s*=\s*ON", tail, re.I):
            out.append((_name(m.group(1)), n[m.end():end], tail))
    return out


def _mot(n: str) -> list[Violation]:
    out, where = [], "memory optimized tables"
    for name, cols, tail in _memory_optimized_tables(_blank_strings(n)):
        if re.search(r"\)\s*ON\s+[\[\w]|^\s*ON\s+[\[\w]", tail, re.I):
            out.append(_v("mot.on", "feature", "ON", where))
        for item in _split_top(cols):
            up = item.upper()
            if re.search(r"(?<!NON)CLUSTERED\b", up) or (re.search(r"\bPRIMARY KEY\b", up)
                                                         and "NONCLUSTERED" not in up):
                out.append(_v("mot.clustered", where=where))
            if re.search(r"\bHASH\b", up):
                if "BUCKET_COUNT" not in up:
                    out.append(_v("mot.bucket_count", "index option", "HASH without BUCKET_COUNT", where))
                key = re.search(r"\bHASH\s*\(([^)]*)\)", up)
                if key and re.search(r"\b(?:ASC|DESC)\b", key.group(1)):
                    out.append(_v("mot.hash_order", "option", "ASC/DESC", where))
            for opts in re.findall(r"\bWITH\s*\(([^)]*)\)", up):
                for opt in _split_top(opts):
                    if opt.split("=")[0].strip() != "BUCKET_COUNT":
                        out.append(_v("mot.index_option", "index option", opt.split("=")[0].strip(), where))
            if not re.match(r"^(?:CONSTRAINT|PRIMARY|INDEX|UNIQUE)\b", up):
                words = up.split()
                if len(words) > 1 and words[1].split("(")[0] in UNSUPPORTED_TYPES:
                    out.append(_v("mot.type", "data type", words[1].split("(")[0].lower(), where))
                if re.search(r"\b(?:SPARSE|FILESTREAM|ROWGUIDCOL)\b", up):
                    out.append(_v("mot.type", "feature", re.search(r"\b(SPARSE|FILESTREAM|ROWGUIDCOL)\b", up).group(1),
                                  where))
    return out


# -- transactions ----------------------------------------------------------------------------------------
NOT_IN_TRANSACTION = re.compile(r"\b(ALTER DATABASE|CREATE DATABASE|DROP DATABASE|BACKUP|RESTORE|RECONFIGURE|"
                                r"(?:ALTER|CREATE|DROP) FULLTEXT (?:CATALOG|INDEX))\b", re.I)
TXN = re.compile(r"\bBEGIN\s+TRAN(?:SACTION)?\b|\bCOMMIT(?:\s+TRAN(?:SACTION)?)?\b"
                 r"|\bROLLBACK(?:\s+TRAN(?:SACTION)?)?\b", re.I)


def _in_transaction(n: str, ctx: Context) -> list[Violation]:
    if PROC.match(n) or re.match(r"^CREATE (?:OR ALTER )?(?:FUNCTION|TRIGGER)\b", n, re.I):
        return []  # a module's body runs when it is called, not when it is created
    body = _blank_strings(n)
    events = sorted([(m.start(), "txn", m.group(0).upper()) for m in TXN.finditer(body)]
                    + [(m.start(), "stmt", m.group(1).upper()) for m in NOT_IN_TRANSACTION.finditer(body)]
                    + [(m.start(), "mo_ddl", m.group(0)) for m in re.finditer(
                        r"\b(?:CREATE|ALTER|DROP)\s+(?:TABLE|PROC(?:EDURE)?)(?:\s+IF\s+EXISTS)?\s+([\w.\[\]]+)", body,
                        re.I)])
    depth, out = ctx.trancount, []
    mo_created = {name for name, _, _ in _memory_optimized_tables(body)}
    for _, kind, text in events:
        if kind == "txn":
            depth = depth + 1 if text.startswith("BEGIN") else 0 if text.startswith("ROLLBACK") else max(0, depth - 1)
        elif depth > 0 and kind == "stmt":
            out.append(_v("txn.statement", feature=re.sub(r"\s+", " ", text)))
        elif depth > 0 and kind == "mo_ddl":
            target = _name(re.split(r"\s+", text)[-1])
            if target in ctx.mo_tables | ctx.native_procs | mo_created or "NATIVE_COMPILATION" in body.upper():
                out.append(_v("txn.mo_ddl", where="memory optimized tables"))
    return out


def _truncate(n: str, ctx: Context) -> list[Violation]:
    return [_v("mot.truncate", "operation", "TRUNCATE TABLE", "memory optimized tables")
            for raw in re.findall(r"\bTRUNCATE\s+TABLE\s+([\w.\[\]]+)", n, re.I) if _name(raw) in ctx.mo_tables]


CHECKS: tuple[Callable[[str, Context], list[Violation]], ...] = (
    _native, lambda n, ctx: _mot(n), _in_transaction, _truncate)


def violations(batch: str, ctx: Context) -> list[Violation]:
    """Every rule the (normalised) batch breaks, in the order of CHECKS."""
    out = []
    for check in CHECKS:
        out += check(batch, ctx)
    return out


def record(batch: str, mo_tables: set, native_procs: set) -> None:
    """After a batch succeeded: the memory-optimized tables and natively compiled procedures it made or dropped."""
    body = _blank_strings(batch)
    for m in re.finditer(r"\bDROP\s+(TABLE|PROC(?:EDURE)?)\s+(?:IF\s+EXISTS\s+)?([\w.\[\]]+)", body, re.I):
        (mo_tables if m.group(1).upper() == "TABLE" else native_procs).discard(_name(m.group(2)))
    for name, _, _ in _memory_optimized_tables(body):
        mo_tables.add(name)
    m = PROC.match(body)
    if m and "NATIVE_COMPILATION" in m.group(2).upper():
        native_procs.add(_name(m.group(1)))
