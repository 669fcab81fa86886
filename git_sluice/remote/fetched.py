"""The lease marks as last fetched, read by git alone, for the commands a dashboard polls.

``git sluice status`` reads every branch's lease. Opening the clone with
libgit2 costs more than the rest of the command, so this reads the marks and
their messages with one ``git rev-parse`` and one ``git for-each-ref`` and
hands :class:`~.lease_keeper.LeaseKeeper` the two things it reads: ``ref`` and
``read_message``. Anything it cannot read for sure (a message holding a NUL,
an unexpected line) makes :meth:`FetchedLeases.read` give up, and the caller
opens the clone the usual way.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from ..gitcli import start
from ..paths import sluice_dir_in
from ..repo import clone_dirs as clone_dirs  # its old home
from .lease_record import lease_ref

_OID = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")
_PREFIX = lease_ref("")
_FORMAT = "%(refname)%00%(objectname)%00%(objecttype)%00%(contents)%00"


def parse_for_each_ref(text: str) -> dict[str, tuple[str, str | None]] | None:
    """``{ref: (oid, message or None)}`` from :data:`_FORMAT`'s output; None when unsure.

    Every record is four NUL-ended fields, each after the first preceded by
    the newline for-each-ref ends a record with. A field that is not what it
    must be (a ref outside the lease namespace, a malformed object id) means a
    message held a NUL: the parse is refused rather than guessed.
    """
    fields = text.split("\0")
    if fields and fields[-1].strip() == "":
        fields.pop()
    if len(fields) % 4:
        return None
    found: dict[str, tuple[str, str | None]] = {}
    for i in range(0, len(fields), 4):
        ref, oid, kind, message = fields[i : i + 4]
        ref = ref[1:] if i and ref.startswith("\n") else ref
        if not ref.startswith(_PREFIX) or not _OID.fullmatch(oid) or ref in found:
            return None
        found[ref] = (oid, message if kind == "commit" else None)
    return found


class FetchedLeases:
    """The clone's dirs and its lease marks, as a :class:`~.lease_keeper.LeaseKeeper` reads them."""

    def __init__(self, git_dir: Path, common_dir: Path, workdir: Path | None,
                 marks: dict[str, tuple[str, str | None]]) -> None:
        self.git_dir = git_dir
        self.common_dir = common_dir
        self.workdir = workdir
        self._marks = marks
        self._messages = {oid: message for oid, message in marks.values()}

    @classmethod
    def read(cls, path: str | os.PathLike[str] = ".") -> FetchedLeases | None:
        """The clone at ``path`` (NotARepository if none); None when the marks cannot be read for sure."""
        # the listing runs beside clone_dirs' rev-parse (issue 15); a clone_dirs error still comes first
        listing = start(["for-each-ref", f"--format={_FORMAT}", _PREFIX.rstrip("/") + "/"], cwd=path)
        try:
            git_dir, common_dir, workdir = clone_dirs(path)
        finally:
            listed = listing.result()
        marks = parse_for_each_ref(listed.stdout) if listed.returncode == 0 else None
        if marks is None:
            return None
        return cls(git_dir, common_dir, workdir, marks)

    @property
    def sluice_dir(self) -> Path:
        return sluice_dir_in(self.common_dir)

    def ref(self, name: str) -> str | None:
        mark = self._marks.get(name)
        return mark[0] if mark is not None else None

    def read_message(self, oid: str) -> str | None:
        return self._messages.get(oid)
