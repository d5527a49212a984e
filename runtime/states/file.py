"""The ``file`` state module (Salt's ``file.*`` states).

The functions live in small modules by concern; this module is what the executor looks up:

* content: ``managed``, ``serialize``, ``copy`` (``_file_managed``), ``recurse`` (``_file_recurse``)
* tree: ``directory``, ``absent``, ``symlink``, ``touch``, ``exists``, ``missing`` (``_file_tree``)
* edits: ``replace``, ``blockreplace``, ``line``, ``append`` (``_file_edit``), ``comment``,
  ``uncomment`` (``_file_comment``)
"""

from __future__ import annotations

from runtime.states._file_comment import comment, uncomment
from runtime.states._file_edit import append, blockreplace, line, replace
from runtime.states._file_managed import copy, managed, serialize
from runtime.states._file_recurse import recurse
from runtime.states._file_tree import absent, directory, exists, missing, symlink, touch

__all__ = [
    "absent",
    "append",
    "blockreplace",
    "comment",
    "copy",
    "directory",
    "exists",
    "line",
    "managed",
    "missing",
    "recurse",
    "replace",
    "serialize",
    "symlink",
    "touch",
    "uncomment",
]
