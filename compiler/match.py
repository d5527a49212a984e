"""Target matchers, shared by top files, the master and the minion.

Salt's targeting semantics: glob (default), pcre, list, grain, grain_pcre,
pillar, pillar_pcre, pillar_exact, ipcidr, nodegroup and compound
(``G@ P@ I@ J@ L@ E@ S@ N@`` engines joined by ``and``/``or``/``not`` and
parenthesised groups, ``not`` binding tighter than ``and``, ``and`` tighter
than ``or``).  Where Salt silently treats a malformed compound expression as
"no match", we raise ``MatchError`` so that the caller can name it.
"""

from __future__ import annotations

import fnmatch
import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from compiler.errors import MATCH_ERROR, CompileError

DEFAULT_DELIM = ":"

_TARGET = re.compile(r"^(?:(?P<engine>[A-Z])(?P<delimiter>(?<=[GPIJ])[^@])?@)(?P<pattern>.+)$")
_OPERATORS = ("and", "or", "not", "(", ")")
_ENGINES = {
    "G": "grain",
    "P": "grain_pcre",
    "I": "pillar",
    "J": "pillar_pcre",
    "L": "list",
    "E": "pcre",
    "S": "ipcidr",
    "N": "nodegroup",
}


class MatchError(CompileError):
    """A malformed target expression."""

    def __init__(self, message: str, file: str | None = None, line: int | None = None):
        super().__init__(MATCH_ERROR, message, file, line)


@dataclass
class Minion:
    """What a matcher needs to know about one minion.

    ``assume_data`` None (the usual case): grain, pillar and ipcidr targets are matched against
    ``grains`` and ``pillar``.  True or False: every such target answers that without looking at
    any data, so the master can tell whether a minion it has no data for can match an expression
    on its id alone (evaluated once assuming True, once False).
    """

    id: str
    grains: Mapping[str, Any] = field(default_factory=dict)
    pillar: Mapping[str, Any] = field(default_factory=dict)
    assume_data: bool | None = None


# -- data traversal ------------------------------------------------------------

def traverse(data: Any, key: str, default: Any = None, delimiter: str = DEFAULT_DELIM) -> Any:
    """Walk nested dicts (and list indexes / lists of dicts) along 'a:b:c'."""
    ptr = data
    for part in key.split(delimiter):
        if isinstance(ptr, Mapping):
            if part not in ptr:
                return default
            ptr = ptr[part]
        elif isinstance(ptr, list):
            try:
                ptr = ptr[int(part)]
            except (ValueError, IndexError):
                for item in ptr:
                    if isinstance(item, Mapping) and part in item:
                        ptr = item[part]
                        break
                else:
                    return default
        else:
            return default
    return ptr


def _value_match(target: Any, pattern: str, regex: bool, exact: bool) -> bool:
    text = str(target).lower()
    pat = str(pattern).lower()
    if regex:
        try:
            return re.match(pat, text) is not None
        except re.error:
            return False
    if exact:
        return text == pat
    return fnmatch.fnmatch(text, pat)


def _dict_match(target: Mapping[str, Any], pattern: str, regex: bool, exact: bool) -> bool:
    wildcard = pattern.startswith("*:")
    if wildcard:
        pattern = pattern[2:]
    if pattern == "*" or pattern in target:
        return True
    if any(_value_match(key, pattern, regex, exact) for key in target):
        return True
    if subdict_match(target, pattern, DEFAULT_DELIM, regex, exact):
        return True
    if wildcard:
        for value in target.values():
            if isinstance(value, Mapping):
                if _dict_match(value, pattern, regex, exact):
                    return True
            elif isinstance(value, list):
                if any(_value_match(item, pattern, regex, exact) for item in value):
                    return True
            elif _value_match(value, pattern, regex, exact):
                return True
    return False


def subdict_match(data: Mapping[str, Any], expr: str, delimiter: str = DEFAULT_DELIM, regex: bool = False,
                  exact: bool = False) -> bool:
    """Match 'key:sub:value' against nested data; deeper keys are tried first."""
    parts = expr.split(delimiter)
    if len(parts) < 2:
        return False
    for idx in range(len(parts) - 1, 0, -1):
        key = delimiter.join(parts[:idx])
        if key == "*":
            pattern, found = expr, data
        else:
            pattern = delimiter.join(parts[idx:])
            found = traverse(data, key, {}, delimiter)
        if found == {}:
            continue
        if isinstance(found, Mapping):
            if _dict_match(found, pattern, regex, exact):
                return True
            continue
        if isinstance(found, (list, tuple)):
            for member in found:
                if isinstance(member, Mapping) and _dict_match(member, pattern, regex, exact):
                    return True
                if _value_match(member, pattern, regex, exact):
                    return True
            continue
        if _value_match(found, pattern, regex, exact):
            return True
    return False


# -- simple matchers -------------------------------------------------------------

def glob_match(pattern: str, minion: Minion) -> bool:
    return fnmatch.fnmatchcase(minion.id, str(pattern))


def pcre_match(pattern: str, minion: Minion) -> bool:
    try:
        return re.match(str(pattern), minion.id) is not None
    except re.error as exc:
        raise MatchError(f"invalid regular expression {pattern!r}: {exc}") from None


def list_match(targets: str | list[Any], minion: Minion) -> bool:
    names = targets.split(",") if isinstance(targets, str) else [str(t) for t in targets]
    return minion.id in (n.strip() for n in names)


def ipcidr_match(target: str, minion: Minion) -> bool:
    try:
        net = ipaddress.ip_network(str(target), strict=False)
    except ValueError:
        raise MatchError(f"invalid IP address or CIDR {target!r}") from None
    addrs = minion.grains.get(f"ipv{net.version}", [])
    if isinstance(addrs, str):
        addrs = [addrs]
    for addr in addrs or []:
        try:
            if ipaddress.ip_address(str(addr).split("/")[0]) in net:
                return True
        except ValueError:
            continue
    return False


def _need_delim(expr: str, delimiter: str, kind: str) -> None:
    if delimiter not in expr:
        raise MatchError(f"{kind} target {expr!r} needs the form key{delimiter}value")


def grain_match(expr: str, minion: Minion, delimiter: str = DEFAULT_DELIM) -> bool:
    _need_delim(expr, delimiter, "grain")
    return subdict_match(minion.grains, expr, delimiter)


def grain_pcre_match(expr: str, minion: Minion, delimiter: str = DEFAULT_DELIM) -> bool:
    _need_delim(expr, delimiter, "grain_pcre")
    return subdict_match(minion.grains, expr, delimiter, regex=True)


def pillar_match(expr: str, minion: Minion, delimiter: str = DEFAULT_DELIM) -> bool:
    _need_delim(expr, delimiter, "pillar")
    return subdict_match(minion.pillar, expr, delimiter)


def pillar_pcre_match(expr: str, minion: Minion, delimiter: str = DEFAULT_DELIM) -> bool:
    _need_delim(expr, delimiter, "pillar_pcre")
    return subdict_match(minion.pillar, expr, delimiter, regex=True)


def pillar_exact_match(expr: str, minion: Minion, delimiter: str = DEFAULT_DELIM) -> bool:
    _need_delim(expr, delimiter, "pillar_exact")
    return subdict_match(minion.pillar, expr, delimiter, exact=True)


# -- nodegroups -----------------------------------------------------------------

def expand_nodegroup(name: str, nodegroups: Mapping[str, Any], _seen: frozenset[str] = frozenset(),
                     nested: bool = False) -> list[str]:
    """The compound words a nodegroup stands for."""
    if name in _seen:
        raise MatchError(f"nodegroup {name!r} includes itself")
    if name not in nodegroups:
        raise MatchError(f"unknown nodegroup {name!r}")
    definition = nodegroups[name]
    if isinstance(definition, str):
        words = definition.split()
    elif isinstance(definition, (list, tuple)):
        words = [str(w) for w in definition]
    else:
        raise MatchError(f"nodegroup {name!r} must be a string or a list")
    plain = [w for w in words if w not in _OPERATORS]
    if len(plain) == len(words) and not any("*" in w or re.match(r"^[A-Z]@", w) for w in words):
        # a bare list of names (or of regexes): Salt's backwards-compatible reading
        regex_chars = "([{\\?}])"
        if any(ch in w for w in words for ch in regex_chars):
            return ["E@" + ",".join(words)]
        return ["L@" + ",".join(words)]
    out: list[str] = []
    for word in words:
        if word.startswith("N@") and len(word) > 2:
            out.extend(expand_nodegroup(word[2:], nodegroups, _seen | {name}, nested=True))
        else:
            out.append(word)
    return ["(", *out, ")"]


# -- compound -------------------------------------------------------------------

_DATA_TYPES = {"grain", "grain_pcre", "pillar", "pillar_pcre", "pillar_exact", "ipcidr"}


class _CompoundParser:
    def __init__(self, words: list[str], minion: Minion, nodegroups: Mapping[str, Any], expr: str):
        self.words = words
        self.pos = 0
        self.minion = minion
        self.nodegroups = nodegroups
        self.expr = expr

    def error(self, why: str) -> MatchError:
        return MatchError(f"invalid compound target {self.expr!r}: {why}")

    def peek(self) -> str | None:
        return self.words[self.pos] if self.pos < len(self.words) else None

    def take(self) -> str:
        word = self.words[self.pos]
        self.pos += 1
        return word

    def parse(self) -> bool:
        if not self.words:
            raise self.error("empty expression")
        value = self.parse_or()
        if self.peek() is not None:
            raise self.error(f"unexpected {self.peek()!r}")
        return value

    def parse_or(self) -> bool:
        value = self.parse_and()
        while self.peek() == "or":
            self.take()
            rhs = self.parse_and()
            value = value or rhs
        return value

    def parse_and(self) -> bool:
        value = self.parse_not()
        while self.peek() in ("and", "not"):
            if self.take() == "not":
                self.pos -= 1  # 'x not y' means 'x and not y', as in Salt
            rhs = self.parse_not()
            value = value and rhs
        return value

    def parse_not(self) -> bool:
        if self.peek() == "not":
            self.take()
            return not self.parse_not()
        return self.parse_atom()

    def parse_atom(self) -> bool:
        word = self.peek()
        if word is None:
            raise self.error("expression ends where a target was expected")
        if word == "(":
            self.take()
            if self.peek() in ("and", "or"):
                raise self.error(f"{self.peek()!r} right after '('")
            value = self.parse_or()
            if self.peek() != ")":
                raise self.error("missing ')'")
            self.take()
            return value
        if word in ("and", "or", ")"):
            raise self.error(f"unexpected {word!r}")
        self.take()
        value = self.evaluate(word)
        nxt = self.peek()
        if nxt is not None and nxt not in _OPERATORS:
            raise self.error(f"missing operator between {word!r} and {nxt!r}")
        if nxt == "(":
            raise self.error(f"missing operator before '(' after {word!r}")
        return value

    def evaluate(self, word: str) -> bool:
        found = _TARGET.match(word)
        if not found:
            return glob_match(word, self.minion)
        engine, delim, pattern = found.group("engine"), found.group("delimiter"), found.group("pattern")
        if engine == "N":
            words = expand_nodegroup(pattern, self.nodegroups)
            return _CompoundParser(words, self.minion, self.nodegroups, " ".join(words)).parse()
        if engine not in _ENGINES:
            raise self.error(f"unknown target engine '{engine}@' in {word!r}")
        return match_one(_ENGINES[engine], pattern, self.minion, self.nodegroups, delim or DEFAULT_DELIM)


def compound_match(expr: str | list[Any], minion: Minion, nodegroups: Mapping[str, Any] | None = None) -> bool:
    words = expr.split() if isinstance(expr, str) else [str(w) for w in expr]
    if len(words) == 1 and words[0] not in _OPERATORS and not _TARGET.match(words[0]):
        return glob_match(words[0], minion)  # a bare glob, the usual top-file target: what the parser would do
    text = expr if isinstance(expr, str) else " ".join(words)
    return _CompoundParser(words, minion, nodegroups or {}, text).parse()


def nodegroup_match(name: str, minion: Minion, nodegroups: Mapping[str, Any] | None = None) -> bool:
    groups = nodegroups or {}
    if name not in groups:
        return False
    words = expand_nodegroup(name, groups)
    return _CompoundParser(words, minion, groups, " ".join(words)).parse()


MATCH_TYPES = ("glob", "pcre", "list", "grain", "grain_pcre", "pillar", "pillar_pcre", "pillar_exact",
               "ipcidr", "compound", "nodegroup")


def match_one(tgt_type: str, expr: Any, minion: Minion, nodegroups: Mapping[str, Any] | None = None,
              delimiter: str = DEFAULT_DELIM) -> bool:
    """Does minion match expr under tgt_type?  Raises MatchError when expr is malformed."""
    if minion.assume_data is not None and tgt_type in _DATA_TYPES:
        return minion.assume_data
    if tgt_type == "glob":
        return glob_match(str(expr), minion)
    if tgt_type == "pcre":
        return pcre_match(str(expr), minion)
    if tgt_type == "list":
        return list_match(expr, minion)
    if tgt_type == "grain":
        return grain_match(str(expr), minion, delimiter)
    if tgt_type == "grain_pcre":
        return grain_pcre_match(str(expr), minion, delimiter)
    if tgt_type == "pillar":
        return pillar_match(str(expr), minion, delimiter)
    if tgt_type == "pillar_pcre":
        return pillar_pcre_match(str(expr), minion, delimiter)
    if tgt_type == "pillar_exact":
        return pillar_exact_match(str(expr), minion, delimiter)
    if tgt_type == "ipcidr":
        return ipcidr_match(str(expr), minion)
    if tgt_type == "compound":
        return compound_match(expr, minion, nodegroups)
    if tgt_type == "nodegroup":
        return nodegroup_match(str(expr), minion, nodegroups)
    raise MatchError(f"unknown match type {tgt_type!r} (known: {', '.join(MATCH_TYPES)})")
