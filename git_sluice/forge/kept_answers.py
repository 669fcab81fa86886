"""Kept answers: the last full answer at each address, and what failed there.

Why not an off-the-shelf HTTP cache (hishel)? git-sluice needs three things a
cache keyed by URL does not give: (1) the record lives in the clone's common
dir, so every worktree and process of the clone shares it and a corrupt file
costs one address, not the whole cache; (2) callers asking the same address
at the same moment, in *any process*, share one call (single flight through
a per-address lock file and the mark in it); (3) an address that keeps
failing is not asked again for a while, across processes. A kept answer is
never served without GitHub's word that it is unchanged (a 304) — except to
a caller that was already waiting for the very call that just confirmed it.

What is on disk, and why a 304 writes nothing but a few bytes (issue 15):

- ``<key>.body``: the full answer — one line of JSON (the address, its
  validators, status and kept headers), then the body's bytes as GitHub sent
  them. Written (atomically) only on a 200. The validators live with the
  body they validate, so the two can never disagree after a crash.
- ``<key>.lock``: the single-flight lock (:mod:`.flight_lock`). Whoever holds it writes a fresh
  *mark* into it when the call is answered; a caller that waited and finds
  the mark moved shares that answer. A pwrite into an open file, not a
  rename: a quiet round of 150 conditional GETs used to rewrite and rename
  150 meta files.
- ``index.json``: failure memory (the addresses that failed and until when),
  one document for the clone, written only when an address fails or
  recovers — a quiet round does not write it at all. Corrupt, it is
  discarded (with a warning): the addresses are asked again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import threading
from dataclasses import field
from pathlib import Path
from typing import Any

from ..records import record
from ..statefile import JsonDocument, ensure_dir, parse_json, write_atomic
from .flight_lock import FlightLock

log = logging.getLogger("git_sluice")

FAILURE_BASE = 60.0
FAILURE_CAP = 900.0

# Only these answer headers are kept: enough to serve a 304 faithfully
# (pagination, content type) and nothing that could carry a credential.
KEPT_HEADERS = ("content-type", "link", "etag", "last-modified")

BODY_MAGIC = b"sluice-kept 2 "

def address_of(method: str, url: str) -> str:
    """The key of a kept answer: method and full URL with its query."""
    return f"{method.upper()} {url}"


def failure_backoff(count: int) -> float:
    """60 s after the first failure, doubling while it keeps failing, at most 15 min."""
    if count <= 0:
        return 0.0
    steps = min(count - 1, 16)  # 2**16 * 60 s is far past the cap
    return min(FAILURE_BASE * float(2**steps), FAILURE_CAP)


@record
class KeptBody:
    """The last full answer: status, the kept headers and the body bytes."""

    etag: str | None
    last_modified: str | None
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""


@record
class Meta:
    """What is known of one address: its validators (from the kept body) and its failure memory."""

    address: str
    etag: str | None = None
    last_modified: str | None = None
    fail_count: int = 0
    fail_until: float | None = None
    fail_reason: str | None = None
    kept: KeptBody | None = field(default=None, repr=False, compare=False)

    def failure(self) -> dict[str, object]:
        return {"address": self.address, "fail_count": self.fail_count, "fail_until": self.fail_until,
                "fail_reason": self.fail_reason}

    def take_failure(self, data: object) -> None:
        """Failure memory from the index; raises ValueError on a malformed record."""
        if not isinstance(data, dict) or data.get("address") != self.address:
            raise ValueError("not this address's failure record")
        count, until, reason = data.get("fail_count", 0), data.get("fail_until"), data.get("fail_reason")
        if not isinstance(count, int) or isinstance(count, bool) or not 0 <= count <= 1000:
            raise ValueError("bad fail_count")
        if until is not None and (not isinstance(until, (int, float)) or isinstance(until, bool)):
            raise ValueError("bad fail_until")
        if reason is not None and not isinstance(reason, str):
            raise ValueError("bad fail_reason")
        self.fail_count, self.fail_until, self.fail_reason = count, None if until is None else float(until), reason


def _parse_body(address: str, raw: bytes) -> KeptBody:
    """A body file's answer; raises ValueError (and friends) when it is not one for ``address``."""
    if raw.startswith(BODY_MAGIC):
        line, sep, body = raw[len(BODY_MAGIC):].partition(b"\n")
        if not sep:
            raise ValueError("cut short")
        head = parse_json(line)
    else:  # the earlier layout: one JSON document, the body in base64 (read, rewritten by the next 200)
        import base64

        head = parse_json(raw)
        body = base64.b64decode(head["body"], validate=True)
    if not isinstance(head, dict) or head.get("address", address) != address:
        raise ValueError("not this address's answer")
    for name in ("etag", "last_modified"):
        if head.get(name) is not None and not isinstance(head[name], str):
            raise ValueError(f"bad {name}")
    return KeptBody(
        etag=head.get("etag"),
        last_modified=head.get("last_modified"),
        status=int(head["status"]),
        headers={str(k): str(v) for k, v in dict(head["headers"]).items()},
        body=body,
    )


class KeptAnswers:
    """Kept answers for one directory (a clone's ``.git/sluice/kept``)."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self.index = JsonDocument(self.directory / "index.json", what="kept answers' failure memory")
        self._failures: dict[str, Any] = {}
        self._seen: tuple[int, int, int] | None = None  # (inode, size, mtime) of the index last read
        self._held: dict[str, FlightLock] = {}
        self._mutex = threading.Lock()
        self._dir_made = False
        self.index_writes = 0  # what this object wrote to the index (a quiet round writes nothing)

    # -- paths -------------------------------------------------------------
    def _key(self, address: str) -> str:
        return hashlib.sha256(address.encode()).hexdigest()[:40]

    def _body_path(self, address: str) -> Path:
        return self.directory / f"{self._key(address)}.body"

    def ensure_dir(self) -> None:
        """The folder, made once per object (a lock or a body is about to be written in it)."""
        if not self._dir_made:
            ensure_dir(self.directory)  # a file where the folder goes is moved aside
            self._dir_made = True

    # -- the index (failure memory) ----------------------------------------
    def _index(self) -> dict[str, Any]:
        """The failures by key, re-read only when the file changed (one stat per call)."""
        try:
            st = os.stat(self.index.path)
            seen: tuple[int, int, int] | None = (st.st_ino, st.st_size, st.st_mtime_ns)
        except OSError:
            seen = None
        with self._mutex:
            if seen != self._seen:
                self._failures = self._read_index() if seen is not None else {}
                self._seen = seen
            return self._failures

    def _read_index(self) -> dict[str, Any]:
        data = self.index.read()  # corrupt: discarded with a warning, read as empty
        failures = data.get("failures", {})
        if not isinstance(failures, dict):
            log.warning("kept answers' failure memory %s is corrupt: discarded", self.index.path)
            return {}
        return failures

    def _set_failure(self, meta: Meta) -> None:
        """Write (or clear) one address's failure memory in the index, at once: other callers must see it."""
        key = self._key(meta.address)
        self.ensure_dir()
        with self.index.update() as data:
            failures = data.get("failures")
            if not isinstance(failures, dict):
                failures = data["failures"] = {}
            if meta.fail_count or meta.fail_until is not None:
                failures[key] = meta.failure()
            else:
                failures.pop(key, None)
        self.index_writes += 1

    # -- reading -----------------------------------------------------------
    def meta(self, address: str) -> Meta:
        """What is known of ``address``: validators of its kept body, its failure memory."""
        meta = Meta(address=address)
        kept = self.body(address, meta)
        if kept is not None:
            meta.etag, meta.last_modified, meta.kept = kept.etag, kept.last_modified, kept
        record = self._index().get(self._key(address))
        if record is not None:
            try:
                meta.take_failure(record)
            except ValueError as exc:
                log.warning("failure memory of %s was corrupt (%s): discarded", address, exc)
        return meta

    def body(self, address: str, meta: Meta) -> KeptBody | None:
        """The kept answer, or None (missing or corrupt: discarded, so the next GET is unconditional)."""
        if meta.kept is not None:
            return meta.kept
        path = self._body_path(address)
        try:
            raw = path.read_bytes()
        except OSError:
            return None
        try:
            return _parse_body(address, raw)
        except (ValueError, KeyError, TypeError, UnicodeDecodeError) as exc:
            log.warning("kept answer for %s was corrupt (%s): discarded, asking GitHub afresh", address, exc)
            self._discard(path)
            return None

    # -- writing -----------------------------------------------------------
    def store_full(self, meta: Meta, status: int, headers: dict[str, str], body: bytes, now: float) -> Meta:
        """A 200 (with a validator): keep the answer, validators beside its body."""
        meta.etag = headers.get("etag")
        meta.last_modified = headers.get("last-modified")
        kept = KeptBody(meta.etag, meta.last_modified, status,
                        {k: v for k, v in headers.items() if k in KEPT_HEADERS}, body)
        head = {"address": meta.address, "etag": kept.etag, "last_modified": kept.last_modified,
                "status": status, "headers": kept.headers}
        self.ensure_dir()
        write_atomic(self._body_path(meta.address), BODY_MAGIC + json.dumps(head).encode() + b"\n" + body)
        meta.kept = kept
        return self.confirm(meta, now)

    def confirm(self, meta: Meta, now: float) -> Meta:
        """GitHub answered (a 304, or a fresh answer): failures cleared, waiters told by the lock's mark."""
        had_failed = meta.fail_count or meta.fail_until is not None
        meta.fail_count, meta.fail_until, meta.fail_reason = 0, None, None
        if had_failed:
            self._set_failure(meta)
        self._stamp(meta.address)
        return meta

    def forget_validators(self, meta: Meta) -> Meta:
        """Drop the kept answer (e.g. GitHub confirmed a body we no longer have): the next ask is unconditional."""
        self._discard(self._body_path(meta.address))
        meta.etag = meta.last_modified = None
        meta.kept = None
        return meta

    def fail(self, meta: Meta, reason: str, now: float) -> Meta:
        """The address failed: remember it, so nobody on this clone asks again before ``fail_until``."""
        meta.fail_count += 1
        meta.fail_until = now + failure_backoff(meta.fail_count)
        meta.fail_reason = reason
        self._set_failure(meta)
        self._stamp(meta.address)
        return meta

    def _stamp(self, address: str) -> None:
        with self._mutex:
            lock = self._held.get(address)
        if lock is not None:
            with contextlib.suppress(OSError):
                lock.stamp()

    def _discard(self, *paths: Path) -> None:
        for path in paths:
            with contextlib.suppress(OSError):
                path.unlink()

    # -- single flight -----------------------------------------------------
    def flight_lock(self, address: str) -> FlightLock:
        """The per-address lock: one caller on the clone asks this address at a time.

        Whoever takes it says how long to wait for it (flight.py bounds the wait).
        """
        return FlightLock(address, self.directory / f"{self._key(address)}.lock", self)

    def holding(self, lock: FlightLock) -> None:
        """A lock of this directory was taken: an answer to its address stamps it (waiters share it)."""
        with self._mutex:
            self._held[lock.address] = lock

    def released(self, lock: FlightLock) -> None:
        with self._mutex:
            if self._held.get(lock.address) is lock:
                del self._held[lock.address]
