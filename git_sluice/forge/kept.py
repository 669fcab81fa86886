"""Kept answers: the last full answer at each address, and what failed there.

Why not an off-the-shelf HTTP cache (hishel)? git-sluice needs three things a
cache keyed by URL does not give: (1) the record lives in the clone's common
dir, one file per address, so every worktree and process of the clone shares
it and a corrupt file costs one address, not the whole cache; (2) callers
asking the same address at the same moment, in *any process*, share one call
(single-flight through a per-address file lock and a generation counter);
(3) an address that keeps failing is not asked again for a while, across
processes. A kept answer is never served without GitHub's word that it is
unchanged (a 304) — except to a caller that was already waiting for the very
call that just confirmed it.

Each address has two files: ``<key>.meta`` (small: ETag, Last-Modified,
generation, failure memory; rewritten on every 304) and ``<key>.body`` (the
full answer; rewritten only on a 200). Both are written atomically.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import logging
from dataclasses import dataclass, field
from pathlib import Path

import filelock

from ..statefile import write_atomic

log = logging.getLogger("git_sluice")

FAILURE_BASE = 60.0
FAILURE_CAP = 900.0

# Only these answer headers are kept: enough to serve a 304 faithfully
# (pagination, content type) and nothing that could carry a credential.
KEPT_HEADERS = ("content-type", "link", "etag", "last-modified")


def address_of(method: str, url: str) -> str:
    """The key of a kept answer: method and full URL with its query."""
    return f"{method.upper()} {url}"


def failure_backoff(count: int) -> float:
    """60 s after the first failure, doubling while it keeps failing, at most 15 min."""
    if count <= 0:
        return 0.0
    steps = min(count - 1, 16)  # 2**16 * 60 s is far past the cap
    return min(FAILURE_BASE * float(2**steps), FAILURE_CAP)


@dataclass
class Meta:
    """The small, often-rewritten half of a kept answer."""

    address: str
    generation: int = 0
    etag: str | None = None
    last_modified: str | None = None
    confirmed_at: float | None = None
    fail_count: int = 0
    fail_until: float | None = None
    fail_reason: str | None = None

    def to_json(self) -> dict[str, object]:
        return dict(self.__dict__)

    @classmethod
    def from_json(cls, data: object) -> "Meta":
        if not isinstance(data, dict) or not isinstance(data.get("address"), str):
            raise ValueError("not a kept-answer meta record")
        meta = cls(address=data["address"])
        for name in ("generation", "fail_count"):
            value = data.get(name, 0)
            if not isinstance(value, int):
                raise ValueError(f"bad {name}")
            setattr(meta, name, value)
        for name in ("etag", "last_modified", "fail_reason"):
            value = data.get(name)
            if value is not None and not isinstance(value, str):
                raise ValueError(f"bad {name}")
            setattr(meta, name, value)
        for name in ("confirmed_at", "fail_until"):
            value = data.get(name)
            if value is not None and not isinstance(value, (int, float)):
                raise ValueError(f"bad {name}")
            setattr(meta, name, value)
        return meta


@dataclass
class KeptBody:
    """The last full answer: status, the kept headers and the body bytes."""

    etag: str | None
    last_modified: str | None
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""


class KeptAnswers:
    """Kept answers for one directory (a clone's ``.git/sluice/kept``)."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)

    # -- paths -------------------------------------------------------------
    def _key(self, address: str) -> str:
        return hashlib.sha256(address.encode()).hexdigest()[:40]

    def _paths(self, address: str) -> tuple[Path, Path, Path]:
        key = self._key(address)
        d = self.directory
        return d / f"{key}.meta", d / f"{key}.body", d / f"{key}.lock"

    def _ensure_dir(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)

    # -- reading -----------------------------------------------------------
    def meta(self, address: str) -> Meta:
        """The meta record, or a fresh one; a corrupt record is discarded (and logged)."""
        meta_path, body_path, _ = self._paths(address)
        try:
            raw = meta_path.read_bytes()
        except FileNotFoundError:
            return Meta(address=address)
        except OSError as exc:
            log.warning("kept answer for %s unreadable (%s): asking GitHub afresh", address, exc)
            return Meta(address=address)
        try:
            meta = Meta.from_json(json.loads(raw))
            if meta.address != address:
                raise ValueError("address mismatch")
            return meta
        except (ValueError, UnicodeDecodeError) as exc:
            log.warning("kept answer for %s was corrupt (%s): discarded, asking GitHub afresh", address, exc)
            self._discard(meta_path, body_path)
            return Meta(address=address)

    def body(self, address: str, meta: Meta) -> KeptBody | None:
        """The kept body matching ``meta``'s validators, or None (missing or corrupt: discarded)."""
        meta_path, body_path, _ = self._paths(address)
        try:
            raw = body_path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError:
            return None
        try:
            data = json.loads(raw)
            kept = KeptBody(
                etag=data["etag"],
                last_modified=data["last_modified"],
                status=int(data["status"]),
                headers={str(k): str(v) for k, v in dict(data["headers"]).items()},
                body=base64.b64decode(data["body"], validate=True),
            )
        except (ValueError, KeyError, TypeError, UnicodeDecodeError) as exc:
            log.warning("kept body for %s was corrupt (%s): discarded", address, exc)
            self._discard(body_path)
            return None
        if kept.etag != meta.etag or kept.last_modified != meta.last_modified:
            # the two halves disagree (a crash between writes): the body cannot be trusted
            return None
        return kept

    # -- writing -----------------------------------------------------------
    def store_full(self, meta: Meta, status: int, headers: dict[str, str], body: bytes, now: float) -> Meta:
        """A 200 (with a validator): keep the body, then the meta that points at it."""
        _, body_path, _ = self._paths(meta.address)
        meta.etag = headers.get("etag")
        meta.last_modified = headers.get("last-modified")
        kept = {
            "etag": meta.etag,
            "last_modified": meta.last_modified,
            "status": status,
            "headers": {k: v for k, v in headers.items() if k in KEPT_HEADERS},
            "body": base64.b64encode(body).decode("ascii"),
        }
        self._ensure_dir()
        write_atomic(body_path, json.dumps(kept).encode())
        return self.confirm(meta, now)

    def confirm(self, meta: Meta, now: float) -> Meta:
        """GitHub confirmed the kept answer (a 304, or a fresh 200): clear failures, bump the generation."""
        meta.generation += 1
        meta.confirmed_at = now
        meta.fail_count = 0
        meta.fail_until = None
        meta.fail_reason = None
        self._write_meta(meta)
        return meta

    def forget_validators(self, meta: Meta) -> Meta:
        """Drop the validators (e.g. the kept body is gone), so the next ask is unconditional."""
        meta.etag = None
        meta.last_modified = None
        meta.generation += 1
        self._write_meta(meta)
        return meta

    def fail(self, meta: Meta, reason: str, now: float) -> Meta:
        """The address failed: remember it, so nobody on this clone asks again before ``fail_until``."""
        meta.generation += 1
        meta.fail_count += 1
        meta.fail_until = now + failure_backoff(meta.fail_count)
        meta.fail_reason = reason
        self._write_meta(meta)
        return meta

    def _write_meta(self, meta: Meta) -> None:
        meta_path, _, _ = self._paths(meta.address)
        self._ensure_dir()
        write_atomic(meta_path, json.dumps(meta.to_json()).encode())

    def _discard(self, *paths: Path) -> None:
        for path in paths:
            with contextlib.suppress(OSError):
                path.unlink()

    # -- single flight -----------------------------------------------------
    def flight_lock(self, address: str) -> filelock.BaseFileLock:
        """The per-address lock: one caller on the clone asks this address at a time.

        Whoever takes it says how long to wait for it (flight.py bounds the wait).
        """
        _, _, lock_path = self._paths(address)
        self._ensure_dir()
        return filelock.FileLock(str(lock_path))
