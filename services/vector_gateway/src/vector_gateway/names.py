"""User names of collections and vector stores, mapped to Milvus collection names and back.

Users write 1-255 letters, digits, '-', '_' or '.', starting with a letter or digit (NAME_PATTERN).
Milvus takes letters, digits and '_' only, and the registry's ``collection`` column holds 64 bytes, so:

- A name Milvus and the registry take as it is (a letter, then up to 62 letters, digits or '_': every
  name an index made before names widened holds) is its own Milvus name. No migration.
- Any other name becomes ``_n_`` + the name with '_' -> '__', '-' -> '_h', '.' -> '_d' (reversible, case kept),
- or, when that is longer than 63 characters, ``_h_`` + 40 hex digits of its SHA-256; the name itself is
  recorded on the collection (USER_NAME_PROPERTY) so that listings give it back.

User names never start with '_', so a mapped name is never a user's own; the gateway's own collections
(``_documents``, ``_write_leases``, vector stores under ``_vs_``) start with none of ``_n_`` and ``_h_``.
A vector store is ``_vs_`` + its name when that is a letter or digit then up to 59 letters, digits or '_'
(as before), else ``_vs_`` + the mapped form above (which starts with '_', so never an old store's name).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping

MAX_MAPPED = 63  # the registry's collection column holds 64 bytes; registry keys add '/' + a 128-byte doc id
ESCAPED = "_n_"
HASHED = "_h_"
VECTOR_STORE_PREFIX = "_vs_"
USER_NAME_PROPERTY = "user_name"
_PLAIN_COLLECTION = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,62}")
_PLAIN_STORE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_]{0,59}")
_ESCAPES = {"_": "__", "-": "_h", ".": "_d"}
_UNESCAPES = {code[1]: char for char, code in _ESCAPES.items()}


def _escape(name: str) -> str:
    return "".join(_ESCAPES.get(char, char) for char in name)


def _unescape(body: str) -> str | None:
    out, chars = [], iter(body)
    for char in chars:
        if char != "_":
            out.append(char)
            continue
        decoded = _UNESCAPES.get(next(chars, ""))
        if decoded is None:
            return None
        out.append(decoded)
    return "".join(out)


def _mapped(name: str) -> str:
    escaped = ESCAPED + _escape(name)
    if len(escaped) <= MAX_MAPPED:
        return escaped
    return HASHED + hashlib.sha256(name.encode()).hexdigest()[:40]


def collection(name: str) -> str:
    """The Milvus name of document collection ``name`` (also what the registry and leases record)."""
    return name if _PLAIN_COLLECTION.fullmatch(name) else _mapped(name)


def vector_store(name: str) -> str:
    """The Milvus name of vector store ``name``."""
    return VECTOR_STORE_PREFIX + (name if _PLAIN_STORE.fullmatch(name) else _mapped(name))


def is_hashed(milvus_name: str) -> bool:
    return milvus_name.startswith(HASHED)


def user_collection(milvus_name: str, properties: Callable[[], Mapping[str, str]]) -> str | None:
    """The user's name of a Milvus collection, or None when it is one of the gateway's own (or a stranger).

    ``properties`` reads the collection's properties; called only for hashed names."""
    if not milvus_name.startswith("_"):
        return milvus_name
    if milvus_name.startswith(ESCAPED):
        name = _unescape(milvus_name[len(ESCAPED) :])
    elif is_hashed(milvus_name):
        name = properties().get(USER_NAME_PROPERTY)
    else:
        return None
    # Only the canonical form of a name counts: a collection made outside the gateway stays hidden.
    return name if name and collection(name) == milvus_name else None
