"""A parser for the T-SQL the simulator answers: tokens, expressions, and the statements of a batch.

Why not a library: sqlglot's tsql dialect rejects WHILE blocks and ``SET NOCOUNT, XACT_ABORT ON`` (see
tests/tsql_parse.py), and sqlfluff's tree keeps expressions flat (no operator precedence), so it remains the
grammar check (Msg 102) while this module builds the trees the simulator evaluates (``evaluate.py``).

A statement this parser does not know raises :class:`Unsupported`, naming the statement; nothing is matched by
a batch's own text.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any


class Unsupported(Exception):
    """A statement (or clause) the simulator's parser does not know; its text is in the message."""


class SyntaxProblem(Exception):
    """A token out of place (the server's Msg 102)."""


_TOKEN = re.compile(r"""
    (?P<ws>\s+|--[^\n]*|/\*.*?\*/)
  | (?P<str>N?'(?:[^']|'')*')
  | (?P<num>\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)
  | (?P<var>@@?\w+)
  | (?P<br>\[[^\]]*\])
  | (?P<qid>"[^"]*")
  | (?P<id>\#{0,2}[A-Za-z_][\w$#]*)
  | (?P<op><>|!=|<=|>=|\+=|-=|\*=|/=|[=<>+\-*/%(),.;?~&|^])
""", re.S | re.X)


@dataclass(frozen=True)
class Tok:
    kind: str  # str, num, var, id (bracketed and quoted included), op
    text: str
    pos: int
    bracketed: bool = False

    @property
    def value(self) -> Any:
        if self.kind == "str":
            body = self.text[1:] if self.text[0] in "Nn" else self.text
            return body[1:-1].replace("''", "'")
        if self.kind == "num":
            return float(self.text) if re.search(r"[.eE]", self.text) else int(self.text)
        return self.text

    def kw(self, *words: str) -> bool:
        return self.kind == "id" and not self.bracketed and self.text.upper() in words


def tokens(sql: str) -> list[Tok]:
    out, i = [], 0
    while i < len(sql):
        m = _TOKEN.match(sql, i)
        if not m:
            raise SyntaxProblem(f"Incorrect syntax near '{sql[i:i + 20]}'.")
        kind = m.lastgroup
        if kind == "br":
            out.append(Tok("id", m.group()[1:-1], i, True))
        elif kind == "qid":
            out.append(Tok("id", m.group()[1:-1], i, True))
        elif kind != "ws":
            out.append(Tok(kind, m.group(), i))
        i = m.end()
    return out


# -- trees ------------------------------------------------------------------------------------------
@dataclass
class Node:
    op: str  # lit, param, var, col, fn, agg, bin, un, case, cast, in, like, isnull, sub, exists, star, between, window
    args: list = field(default_factory=list)
    name: str = ""
    text: str = ""


@dataclass
class Source:
    kind: str  # table, tvf, sub, values
    name: str = ""  # lower-case, schema-qualified ("sys.dm_os_wait_stats", "dbo.ghosttest", "#t", "@b")
    args: list = field(default_factory=list)
    alias: str = ""
    query: Any = None
    columns: list = field(default_factory=list)


@dataclass
class Join:
    kind: str  # inner, left, cross, apply, outer_apply
    source: Source
    on: Node | None = None


@dataclass
class Select:
    items: list  # (Node, output name | None, assign-to variable | None)
    top: Node | None = None
    into: str | None = None
    sources: list = field(default_factory=list)  # [Source, [Join...]] per comma item
    where: Node | None = None
    group: list = field(default_factory=list)
    having: Node | None = None
    order: list = field(default_factory=list)  # (Node, descending)
    ctes: dict = field(default_factory=dict)
    text: str = ""
    options: list = field(default_factory=list)  # OPTION (...)'s words, upper case: ["MAXDOP", "4"]


@dataclass
class Stmt:
    kind: str
    text: str
    data: dict = field(default_factory=dict)


KEYWORDS = {"SELECT", "FROM", "WHERE", "GROUP", "ORDER", "HAVING", "JOIN", "INNER", "LEFT", "RIGHT", "FULL",
            "OUTER", "CROSS", "APPLY", "ON", "AS", "AND", "OR", "NOT", "INTO", "UNION", "OPTION", "WITH", "BY",
            "SET", "VALUES", "WHEN", "THEN", "ELSE", "END", "CASE", "IS", "NULL", "IN", "LIKE", "BETWEEN",
            "EXISTS", "TOP", "DESC", "ASC", "BEGIN", "IF", "WHILE", "DECLARE", "INSERT", "UPDATE", "DELETE",
            "DROP", "CREATE", "ALTER", "EXEC", "EXECUTE", "GO", "OUTPUT", "WAITFOR", "THROW", "RETURN",
            "TRUNCATE", "CHECKPOINT", "DBCC", "COMMIT", "ROLLBACK", "TRANSACTION", "TRAN", "USE"}
AGGREGATES = {"COUNT", "COUNT_BIG", "MAX", "MIN", "SUM", "AVG"}


class Parser:
    """Recursive descent over the tokens of one batch; ``?`` markers numbered in order of appearance."""

    def __init__(self, sql: str):
        self.sql = sql
        self.t = tokens(sql)
        self.i = 0
        self.nparam = 0

    # -- token helpers
    def peek(self, k: int = 0) -> Tok | None:
        j = self.i + k
        return self.t[j] if j < len(self.t) else None

    def at(self, *words: str, k: int = 0) -> bool:
        t = self.peek(k)
        return t is not None and t.kw(*words)

    def at_op(self, *ops: str, k: int = 0) -> bool:
        t = self.peek(k)
        return t is not None and t.kind == "op" and t.text in ops

    def next(self) -> Tok:
        t = self.peek()
        if t is None:
            raise SyntaxProblem("Incorrect syntax near the end of the batch.")
        self.i += 1
        return t

    def expect(self, *words: str) -> Tok:
        t = self.next()
        if not t.kw(*words):
            raise SyntaxProblem(f"Incorrect syntax near '{t.text}' (expected {' or '.join(words)}).")
        return t

    def expect_op(self, op: str) -> Tok:
        t = self.next()
        if t.kind != "op" or t.text != op:
            raise SyntaxProblem(f"Incorrect syntax near '{t.text}' (expected '{op}').")
        return t

    def accept(self, *words: str) -> bool:
        if self.at(*words):
            self.i += 1
            return True
        return False

    def accept_op(self, op: str) -> bool:
        if self.at_op(op):
            self.i += 1
            return True
        return False

    def ident(self) -> str:
        t = self.next()
        if t.kind != "id" or (not t.bracketed and t.text.upper() in KEYWORDS):
            raise SyntaxProblem(f"Incorrect syntax near '{t.text}'.")
        return t.text

    def name(self) -> str:
        """A possibly qualified object name as written (``dbo.`` kept); @table variables lower-cased."""
        t = self.peek()
        if t is not None and t.kind == "var":
            self.i += 1
            return t.text.lower()
        parts = [self.ident()]
        while self.at_op("."):
            self.i += 1
            parts.append(self.ident())
        return ".".join(parts)

    def skip_parens(self) -> None:
        self.expect_op("(")
        depth = 1
        while depth:
            t = self.next()
            if t.kind == "op" and t.text == "(":
                depth += 1
            elif t.kind == "op" and t.text == ")":
                depth -= 1

    def text_from(self, start: int) -> str:
        end = self.t[self.i - 1]
        return self.sql[self.t[start].pos:end.pos + len(end.text) + (2 if end.bracketed else 0)]

    # -- expressions (precedence: OR < AND < NOT < comparison < + - < * / % < unary)
    def expr(self) -> Node:
        left = self.and_()
        while self.accept("OR"):
            left = Node("bin", [left, self.and_()], "OR")
        return left

    def and_(self) -> Node:
        left = self.not_()
        while self.accept("AND"):
            left = Node("bin", [left, self.not_()], "AND")
        return left

    def not_(self) -> Node:
        if self.accept("NOT"):
            return Node("un", [self.not_()], "NOT")
        return self.comparison()

    def comparison(self) -> Node:
        left = self.additive()
        negate = False
        if self.at("NOT") and self.at("LIKE", "IN", "BETWEEN", k=1):
            self.i += 1
            negate = True
        if self.accept("LIKE"):
            node = Node("like", [left, self.additive()])
        elif self.accept("IN"):
            self.expect_op("(")
            if self.at("SELECT"):
                node = Node("in", [left, Node("sub", [self.select()])])
            else:
                node = Node("in", [left] + self.exprs())
            self.expect_op(")")
        elif self.accept("BETWEEN"):
            low = self.additive()
            self.expect("AND")
            node = Node("between", [left, low, self.additive()])
        elif self.accept("IS"):
            neg = self.accept("NOT")
            self.expect("NULL")
            return Node("un", [Node("isnull", [left])], "NOT") if neg else Node("isnull", [left])
        elif self.peek() is not None and self.peek().kind == "op" and self.peek().text in ("=", "<>", "!=", "<", ">",
                                                                                              "<=", ">="):
            op = self.next().text
            return Node("bin", [left, self.additive()], "<>" if op == "!=" else op)
        else:
            return left
        return Node("un", [node], "NOT") if negate else node

    def additive(self) -> Node:
        left = self.term()
        while self.at_op("+", "-"):
            op = self.next().text
            left = Node("bin", [left, self.term()], op)
        return left

    def term(self) -> Node:
        left = self.unary()
        while self.at_op("*", "/", "%"):
            op = self.next().text
            left = Node("bin", [left, self.unary()], op)
        return left

    def unary(self) -> Node:
        if self.accept_op("-"):
            return Node("un", [self.unary()], "-")
        if self.accept_op("+"):
            return self.unary()
        return self.primary()

    def primary(self) -> Node:
        t = self.next()
        if t.kind == "num" or t.kind == "str":
            return Node("lit", [t.value])
        if t.kind == "op" and t.text == "?":
            self.nparam += 1
            return Node("param", [self.nparam - 1])
        if t.kind == "op" and t.text == "*":
            return Node("star")
        if t.kind == "var":
            return Node("var", name=t.text.upper() if t.text.startswith("@@") else t.text.lower())
        if t.kind == "op" and t.text == "(":
            if self.at("SELECT"):
                node = Node("sub", [self.select()])
            else:
                node = self.expr()
            self.expect_op(")")
            return node
        if t.kind != "id":
            raise SyntaxProblem(f"Incorrect syntax near '{t.text}'.")
        word = t.text.upper() if not t.bracketed else ""
        if word == "NULL":
            return Node("lit", [None])
        if word == "CASE":
            return self.case()
        if word == "EXISTS":
            self.expect_op("(")
            node = Node("exists", [self.select()])
            self.expect_op(")")
            return node
        if word in ("CAST", "TRY_CAST") and self.at_op("("):
            self.i += 1
            value = self.expr()
            self.expect("AS")
            typ = self.type_name()
            self.expect_op(")")
            return Node("cast", [value], typ)
        if word in ("CONVERT", "TRY_CONVERT") and self.at_op("("):
            self.i += 1
            typ = self.type_name()
            self.expect_op(",")
            value = self.expr()
            if self.accept_op(","):
                self.expr()
            self.expect_op(")")
            return Node("cast", [value], typ)
        if word in KEYWORDS and word not in ("LEFT", "RIGHT"):
            raise SyntaxProblem(f"Incorrect syntax near '{t.text}'.")
        parts = [t.text]
        while self.at_op(".") and self.peek(1) is not None and (self.peek(1).kind == "id" or self.peek(1).text == "*"):
            self.i += 1
            if self.accept_op("*"):
                return Node("star", name=".".join(parts).lower())
            parts.append(self.next().text)
        if self.at_op("("):  # a function call
            self.i += 1
            fname = ".".join(parts).upper()
            distinct = self.accept("DISTINCT")
            args: list[Node] = [] if self.at_op(")") else self.exprs()
            self.expect_op(")")
            if self.accept("OVER"):
                return self.window(fname, args)
            if fname in AGGREGATES:
                return Node("agg", args, fname, "DISTINCT" if distinct else "")
            return Node("fn", args, fname)
        return Node("col", [p.lower() for p in parts], ".".join(parts).lower())

    # -- the lists every clause repeats
    def exprs(self) -> list[Node]:
        """``e, e, ...``: one expression or more."""
        out = [self.expr()]
        while self.accept_op(","):
            out.append(self.expr())
        return out

    def order_items(self) -> list:
        """``e [ASC | DESC], ...`` after ORDER BY: (Node, descending) pairs."""
        out = []
        while True:
            e = self.expr()
            desc = bool(self.accept("DESC"))
            if not desc:
                self.accept("ASC")
            out.append((e, desc))
            if not self.accept_op(","):
                return out

    def idents(self) -> list[str]:
        """``name, name, ...)`` after an opening bracket: the names, lower case; the closing bracket is read."""
        out = [self.ident().lower()]
        while self.accept_op(","):
            out.append(self.ident().lower())
        self.expect_op(")")
        return out

    def values_rows(self) -> list[list[Node]]:
        """``(e, ...), (e, ...)`` after VALUES: the rows."""
        rows = []
        while True:
            self.expect_op("(")
            rows.append(self.exprs())
            self.expect_op(")")
            if not self.accept_op(","):
                return rows

    def window(self, fname: str, args: list) -> Node:
        """``fn(...) OVER ([PARTITION BY e, ...] [ORDER BY e [ASC | DESC], ...])``: Node("window", [args,
        partition, order]) with order as (Node, descending) pairs."""
        self.expect_op("(")
        partition, order = [], []
        if self.at("PARTITION") and self.at("BY", k=1):
            self.i += 2
            partition = self.exprs()
        if self.at("ORDER") and self.at("BY", k=1):
            self.i += 2
            order = self.order_items()
        if self.at("ROWS", "RANGE"):
            raise Unsupported(f"a window frame ({self.peek().text} ...)")
        self.expect_op(")")
        return Node("window", [args, partition, order], fname)

    def case(self) -> Node:
        subject = None if self.at("WHEN") else self.expr()
        whens = []
        while self.accept("WHEN"):
            cond = self.expr()
            self.expect("THEN")
            whens.append((cond, self.expr()))
        other = self.expr() if self.accept("ELSE") else Node("lit", [None])
        self.expect("END")
        return Node("case", [subject, whens, other])

    def type_name(self) -> str:
        name = self.ident().lower()
        if self.at_op("("):
            start = self.i
            self.skip_parens()
            name += "".join(t.text for t in self.t[start:self.i])
        return name

    # -- SELECT
    def select(self, ctes: dict | None = None) -> Select:
        start = self.i
        self.expect("SELECT")
        self.accept("ALL")
        if self.at("DISTINCT"):
            raise Unsupported("SELECT DISTINCT")
        top = None
        if self.accept("TOP"):
            if self.accept_op("("):
                top = self.expr()
                self.expect_op(")")
            else:
                top = self.primary()
        items = [self.select_item()]
        while self.accept_op(","):
            items.append(self.select_item())
        q = Select(items=items, top=top, ctes=ctes or {})
        if self.accept("INTO"):
            q.into = self.name()
        if self.accept("FROM"):
            q.sources.append(self.from_item())
            while self.accept_op(","):
                q.sources.append(self.from_item())
        if self.accept("WHERE"):
            q.where = self.expr()
        if self.at("GROUP") and self.at("BY", k=1):
            self.i += 2
            q.group = self.exprs()
        if self.accept("HAVING"):
            q.having = self.expr()
        if self.at("ORDER") and self.at("BY", k=1):
            self.i += 2
            q.order = self.order_items()
        if self.at("UNION", "EXCEPT", "INTERSECT", "FOR"):
            raise Unsupported(f"SELECT ... {self.peek().text}")
        if self.at("OPTION"):
            self.i += 1
            first = self.i
            self.skip_parens()
            q.options = [x.text.upper() for x in self.t[first + 1:self.i - 1]]
        q.text = self.text_from(start)
        return q

    def select_item(self):
        t0, t1 = self.peek(), self.peek(1)
        if t0 is not None and t0.kind == "var" and t1 is not None and t1.kind == "op" and t1.text == "=":
            self.i += 2
            return (self.expr(), None, t0.text.lower())
        if t0 is not None and t0.kind == "id" and (t0.bracketed or t0.text.upper() not in KEYWORDS) and \
                t1 is not None and t1.kind == "op" and t1.text == "=":
            self.i += 2
            return (self.expr(), t0.text, None)
        e = self.expr()
        alias = None
        if self.accept("AS"):
            alias = self.next().value if self.peek() and self.peek().kind == "str" else self.ident()
        elif self.peek() is not None and self.peek().kind == "id" and \
                (self.peek().bracketed or self.peek().text.upper() not in KEYWORDS):
            alias = self.ident()
        if alias is None and e.op == "col":
            alias = e.args[-1]
        return (e, alias, None)

    def from_item(self) -> list:
        first = self.source()
        joins = []
        while True:
            if self.at("JOIN") or (self.at("INNER") and self.at("JOIN", k=1)):
                self.accept("INNER")
                self.expect("JOIN")
                src = self.source()
                self.expect("ON")
                joins.append(Join("inner", src, self.expr()))
            elif self.at("LEFT"):
                self.i += 1
                self.accept("OUTER")
                self.expect("JOIN")
                src = self.source()
                self.expect("ON")
                joins.append(Join("left", src, self.expr()))
            elif self.at("CROSS") and self.at("JOIN", k=1):
                self.i += 2
                joins.append(Join("cross", self.source()))
            elif self.at("CROSS") and self.at("APPLY", k=1):
                self.i += 2
                joins.append(Join("apply", self.source()))
            elif self.at("OUTER") and self.at("APPLY", k=1):
                self.i += 2
                joins.append(Join("outer_apply", self.source()))
            elif self.at("RIGHT", "FULL"):
                raise Unsupported(f"{self.peek().text} JOIN")
            else:
                return [first, joins]

    def source(self) -> Source:
        if self.accept_op("("):
            if self.at("VALUES"):
                self.i += 1
                src = Source("values", args=self.values_rows())
            else:
                src = Source("sub", query=self.select())
            self.expect_op(")")
        else:
            name = self.name()
            src = Source("table", name)
            if self.at_op("("):
                self.i += 1
                args = [] if self.at_op(")") else self.exprs()
                self.expect_op(")")
                src = Source("tvf", name, args)
        if self.at("WITH") and self.at_op("(", k=1):  # table hints
            self.i += 1
            self.skip_parens()
        self.accept("AS")
        t = self.peek()
        if t is not None and t.kind == "id" and (t.bracketed or t.text.upper() not in KEYWORDS):
            src.alias = self.ident().lower()
        if src.kind in ("values", "sub") and self.at_op("("):
            self.i += 1
            src.columns = self.idents()
        if self.at("WITH") and self.at_op("(", k=1):
            self.i += 1
            self.skip_parens()
        if not src.alias:
            src.alias = src.name.split(".")[-1]
        return src

    # -- statements
    def batch(self) -> list[Stmt]:
        out = []
        while self.peek() is not None:
            if self.accept_op(";"):
                continue
            out.append(self.statement())
        return out

    def block(self) -> list[Stmt]:
        """One statement, or BEGIN ... END."""
        if self.at("BEGIN") and not self.at("TRANSACTION", "TRAN", k=1) and not self.at("ATOMIC", k=1):
            self.i += 1
            body = []
            while not self.at("END"):
                if self.accept_op(";"):
                    continue
                body.append(self.statement())
            self.expect("END")
            return body
        return [self.statement()]

    def statement(self) -> Stmt:
        start = self.i
        t = self.peek()
        word = t.text.upper() if t.kind == "id" and not t.bracketed else ""
        data: dict = {}
        if word == "SELECT":
            data["query"] = self.select()
            kind = "select"
        elif word == "WITH":
            self.i += 1
            ctes = {}
            while True:
                name = self.ident().lower()
                cols = self.idents() if self.accept_op("(") else []
                self.expect("AS")
                self.expect_op("(")
                ctes[name] = (self.select(), cols)
                self.expect_op(")")
                if not self.accept_op(","):
                    break
            if self.at("INSERT", "DELETE", "UPDATE"):  # a common table expression before a DML statement
                st = self.statement()
                st.data["ctes"] = ctes
                return Stmt(st.kind, self.text_from(start), st.data)
            if not self.at("SELECT"):
                raise Unsupported(f"WITH ... {self.peek().text if self.peek() else ''}")
            data["query"] = self.select(ctes)
            kind = "select"
        elif word == "DECLARE":
            self.i += 1
            decls = []
            while True:
                var = self.next()
                if var.kind != "var":
                    raise SyntaxProblem(f"Incorrect syntax near '{var.text}'.")
                if self.accept("TABLE"):
                    data.setdefault("tables", []).append((var.text.lower(), self.column_defs()))
                else:
                    self.accept("AS")
                    typ = self.type_name()
                    value = self.expr() if self.accept_op("=") else None
                    decls.append((var.text.lower(), typ, value))
                if not self.accept_op(","):
                    break
            data["vars"] = decls
            kind = "declare"
        elif word == "SET":
            self.i += 1
            nxt = self.peek()
            if nxt is not None and nxt.kind == "var":
                self.i += 1
                op = self.next()
                if op.kind != "op" or op.text not in ("=", "+=", "-=", "*=", "/="):
                    raise SyntaxProblem(f"Incorrect syntax near '{op.text}'.")
                data.update(var=nxt.text.lower(), op=op.text, value=self.expr())
                kind = "set_var"
            else:
                while self.peek() is not None and not self.at_op(";") and not self._statement_start():
                    self.i += 1
                kind = "set_option"
        elif word == "IF":
            self.i += 1
            data["cond"] = self.expr()
            data["then"] = self.block()
            data["else"] = self.block() if self.accept("ELSE") else []
            kind = "if"
        elif word == "WHILE":
            self.i += 1
            data["cond"] = self.expr()
            data["body"] = self.block()
            kind = "while"
        elif word == "BEGIN" and self.at("TRANSACTION", "TRAN", k=1):
            self.i += 2
            kind = "begin_tran"
        elif word in ("COMMIT", "ROLLBACK"):
            self.i += 1
            self.accept("TRANSACTION", "TRAN")
            if self.at("WITH") and self.at_op("(", k=1):
                self.i += 1
                self.skip_parens()
            kind = word.lower()
        elif word == "BEGIN":
            data["body"] = self.block()
            kind = "block"
        elif word == "THROW":
            self.i += 1
            data["args"] = self.exprs()
            kind = "throw"
        elif word == "WAITFOR":
            self.i += 1
            self.expect("DELAY", "TIME")
            data["delay"] = self.expr()
            kind = "waitfor"
        elif word == "DROP" and self.at("TABLE", k=1):
            self.i += 2
            data["if_exists"] = self.accept("IF") and bool(self.expect("EXISTS"))
            data["names"] = [self.name()]
            while self.accept_op(","):
                data["names"].append(self.name())
            kind = "drop_table"
        elif word == "TRUNCATE":
            self.i += 1
            self.expect("TABLE")
            data["name"] = self.name()
            kind = "truncate"
        elif word == "INSERT":
            self.i += 1
            self.accept("INTO")
            data["name"] = self.name()
            data["hints"] = []
            if self.at("WITH") and self.at_op("(", k=1):
                self.i += 1
                first = self.i
                self.skip_parens()
                data["hints"] = [x.text.upper() for x in self.t[first + 1:self.i - 1] if x.kind == "id"]
            data["columns"] = self.idents() if self.accept_op("(") else []
            if self.accept("VALUES"):
                data["values"] = self.values_rows()
            elif self.at("SELECT"):
                data["query"] = self.select()
            else:
                raise Unsupported(f"INSERT ... {self.peek().text if self.peek() else ''}")
            kind = "insert"
        elif word == "UPDATE":
            self.i += 1
            if self.accept("TOP"):
                self.expect_op("(")
                data["top"] = self.expr()
                self.expect_op(")")
            data["name"] = self.name()
            if self.at("WITH") and self.at_op("(", k=1):
                self.i += 1
                self.skip_parens()
            self.expect("SET")
            data["sets"] = []
            while True:
                if self.peek() is not None and self.peek().kind == "var":
                    raise Unsupported("UPDATE ... SET @variable")
                column = self.name().lower().split(".")[-1]
                op = self.next()
                if op.kind != "op" or op.text not in ("=", "+=", "-="):
                    raise SyntaxProblem(f"Incorrect syntax near '{op.text}'.")
                data["sets"].append((column, op.text, self.expr()))
                if not self.accept_op(","):
                    break
            data["from"] = self.from_item() if self.accept("FROM") else None
            data["where"] = self.expr() if self.accept("WHERE") else None
            kind = "update"
        elif word == "DELETE":
            self.i += 1
            if self.accept("TOP"):
                raise Unsupported("DELETE TOP")
            self.accept("FROM")
            data["name"] = self.name()
            if self.at("WITH") and self.at_op("(", k=1):
                self.i += 1
                self.skip_parens()
            if self.accept("OUTPUT"):
                data["output"] = [self.select_item()]
                while self.accept_op(","):
                    data["output"].append(self.select_item())
                if self.at("INTO"):
                    raise Unsupported("DELETE ... OUTPUT ... INTO")
            if self.at("FROM"):
                raise Unsupported("DELETE ... FROM")
            data["where"] = self.expr() if self.accept("WHERE") else None
            kind = "delete"
        elif word == "CREATE" and self.at("TABLE", k=1):
            self.i += 2
            data["name"] = self.name()
            data["columns"] = self.column_defs()
            data["options"] = []
            while self.peek() is not None and not self.at_op(";"):
                if self.at("WITH", "ON") and self.at_op("(", k=1):
                    data["options"].append(self.next().text.upper())
                    start = self.i
                    self.skip_parens()
                    data["options"] += [x.text.upper() for x in self.t[start:self.i]]
                elif self.at("ON"):
                    self.i += 1
                    data["options"] += ["ON", self.name().upper()]
                elif self._statement_start():
                    break
                else:
                    data["options"].append(self.next().text.upper())
            kind = "create_table"
        elif word in ("ALTER", "DBCC") or (word == "DROP" and self.at("PARTITION", k=1)):
            depth = 0  # the server's own handlers answer these (server.execute, delegated=True)
            while self.peek() is not None and not (depth == 0 and (self.at_op(";") or self.at("END"))):
                t = self.next()
                depth += t.kind == "op" and t.text == "("
                depth -= t.kind == "op" and t.text == ")"
            kind = "delegate"
        elif word in ("EXEC", "EXECUTE"):
            self.i += 1
            if self.peek() is not None and self.peek().kind == "var":
                raise Unsupported("EXEC @return = ...")
            data["name"] = self.name()
            data["args"] = []
            while self.peek() is not None and not self.at_op(";") and not self._statement_start():
                param = None
                if self.peek().kind == "var" and self.at_op("=", k=1):
                    param = self.next().text.lower()
                    self.i += 1
                value = self.expr()
                output = self.accept("OUTPUT", "OUT")
                data["args"].append((param, value, output))
                if not self.accept_op(","):
                    break
            kind = "exec"
        elif word == "CREATE" and (self.at("PROCEDURE", "PROC", k=1) or
                                   (self.at("OR", k=1) and self.at("ALTER", k=2))):
            self.i += 1
            data["or_alter"] = self.accept("OR") and bool(self.expect("ALTER"))
            self.expect("PROCEDURE", "PROC")
            data["name"] = self.name()
            params = []
            while self.peek() is not None and self.peek().kind == "var":
                pname = self.next().text.lower()
                self.accept("AS")
                self.type_name()
                if self.accept_op("="):
                    self.expr()
                self.accept("OUTPUT", "OUT")
                params.append(pname)
                self.accept_op(",")
            data["params"] = params
            data["body"] = self.sql[self.peek().pos:] if self.peek() is not None else ""
            self.i = len(self.t)  # CREATE PROCEDURE is the whole batch; its body is kept, not run
            kind = "create_procedure"
        elif word == "DROP" and self.at("PROCEDURE", "PROC", "SEQUENCE", k=1):
            self.i += 1
            what = self.next().text.upper()
            data["what"] = {"PROC": "PROCEDURE"}.get(what, what)
            data["if_exists"] = self.accept("IF") and bool(self.expect("EXISTS"))
            data["name"] = self.name()
            kind = "drop_object"
        elif word == "CREATE" and self.at("SEQUENCE", k=1):
            self.i += 2
            data["name"] = self.name()
            nxt = self.peek()
            if nxt is not None and not self.at_op(";") and not self.at("AS", "START", "INCREMENT", "MINVALUE",
                                                                          "MAXVALUE", "CYCLE", "NO", "CACHE"):
                raise SyntaxProblem(f"Incorrect syntax near '{nxt.text}'.")
            while self.peek() is not None and not self.at_op(";"):  # AS type START WITH n INCREMENT BY n
                self.i += 1
            kind = "create_sequence"
        elif word == "CHECKPOINT":
            self.i += 1
            if self.peek() is not None and self.peek().kind == "num":
                self.i += 1
            kind = "checkpoint"
        else:
            raise Unsupported(f"{self.sql[t.pos:t.pos + 80]!r}")
        return Stmt(kind, self.text_from(start), data)

    def _statement_start(self) -> bool:
        return self.at("SELECT", "SET", "DECLARE", "IF", "WHILE", "INSERT", "UPDATE", "DELETE", "DROP", "CREATE",
                       "EXEC", "EXECUTE", "BEGIN", "COMMIT", "ROLLBACK", "WAITFOR", "THROW", "TRUNCATE",
                       "CHECKPOINT", "WITH", "ALTER", "DBCC", "END")

    def column_defs(self) -> dict:
        """``( name type [IDENTITY(..)] [NULL | NOT NULL] ..., CONSTRAINT ... PRIMARY KEY ... (cols), INDEX ... )``:
        the columns (name -> {type, identity, nullable}) and ``__keys__``: the clustered or primary key's columns."""
        self.expect_op("(")
        cols: dict = {}
        keys: list = []
        while True:
            if self.at("CONSTRAINT", "PRIMARY", "INDEX", "UNIQUE"):
                is_index = self.at("INDEX")
                depth = 0
                seen_key = False
                while not (depth == 0 and (self.at_op(",") or self.at_op(")"))):
                    t = self.next()
                    if t.kw("PRIMARY"):
                        seen_key = True
                    if t.kind == "op" and t.text == "(":
                        if depth == 0 and seen_key and not keys and not is_index:
                            start = self.i
                            while not self.at_op(")"):
                                self.i += 1
                            keys = [x.text.lower() for x in self.t[start:self.i] if x.kind == "id"
                                    and not x.kw("ASC", "DESC")]
                            self.i += 1
                            continue
                        depth += 1
                    elif t.kind == "op" and t.text == ")":
                        depth -= 1
            else:
                written = self.ident()
                name = written.lower()
                if self.accept("AS"):  # a computed column: its expression is not evaluated
                    col = {"type": "computed", "identity": False, "nullable": True, "name": written}
                    depth = 0
                    while not (depth == 0 and (self.at_op(",") or self.at_op(")"))):
                        t = self.next()
                        depth += t.kind == "op" and t.text == "("
                        depth -= t.kind == "op" and t.text == ")"
                    cols[name] = col
                    if self.accept_op(")"):
                        break
                    self.expect_op(",")
                    continue
                typ = self.type_name()
                col = {"type": typ, "identity": False, "nullable": True, "name": written}
                while not (self.at_op(",") or self.at_op(")")):
                    t = self.next()
                    if t.kw("IDENTITY"):
                        col["identity"] = True
                        if self.at_op("("):
                            self.skip_parens()
                    elif t.kw("NOT") and self.at("NULL"):
                        self.i += 1
                        col["nullable"] = False
                    elif t.kind == "op" and t.text == "(":
                        self.i -= 1
                        self.skip_parens()
                cols[name] = col
            if self.accept_op(")"):
                break
            self.expect_op(",")
        cols["__keys__"] = keys
        return cols


def parse(sql: str) -> list[Stmt]:
    """The statements of one batch (no GO lines), or :class:`Unsupported` / :class:`SyntaxProblem`."""
    return Parser(sql).batch()
