"""The lease record and the pure take / renew / take-over decisions (docs/design.md#the-lease).

Nothing here does I/O: the keeper (:mod:`.lease_keeper`) reads the remote's mark and
this host's own observations, asks :func:`decide`, and pushes what it says.
That split lets every combination be tested without a remote.

Time here is only ever *this host's own monotonic time*: how long this host
has seen a mark unchanged, how long since this host last wrote. No host
compares its clock with another's; a record carries no timestamp that any
decision reads.
"""

from __future__ import annotations

import dataclasses
import math
import re
from ..records import record


LEASE_PREFIX = "refs/sluice/intake/"
MARK_ROLES = ("driver", "wait")
"""Roles that may hold a mark; a step never pushes one."""
ROLES = (*MARK_ROLES, "step")
MAX_LEASE = 86_400.0
"""A record announcing a longer lease is treated as garbage, so one bad write cannot
block a branch for days: garbage ages on the reader's own lease."""

ACTIONS = ("take", "renew", "take_over", "hold", "defer", "none")

RENEWAL_CYCLE = 16
"""Renewals count modulo this, and a record's commit carries no time (:data:`RECORD_TIME`), so a
holder's records are the same 16 objects for ever (issue #14, point 12): a renewal every third of
a lease left a new unreachable object each time (723 a day per branch, two weeks' garbage in the
remote and every clone). The mark still changes at every renewal, which is all an observer
reads; only one who saw no fetch for 16 renewals (5 1/3 leases) could mistake a live mark for
a still one, and a writer then still needs its own compare-and-swap to win."""
RECORD_TIME = 1_000_000_000
"""The commit time of every lease record (2001-09-09): the same record is the same object."""

_SUBJECT = "git-sluice lease for {branch}"
_TRAILERS = ("Holder", "Role", "Lease", "Renewal", "Sluice-Version")


def lease_ref(branch: str) -> str:
    return LEASE_PREFIX + branch


def branch_of(ref: str) -> str:
    if not ref.startswith(LEASE_PREFIX):
        raise ValueError(f"not a lease ref: {ref}")
    return ref[len(LEASE_PREFIX) :]


def format_seconds(value: float) -> str:
    """Seconds as a trailer value: whole numbers without a fraction."""
    if float(value).is_integer():
        return str(int(value))
    return f"{value:.3f}".rstrip("0").rstrip(".")


def parse_trailers(message: str) -> dict[str, str]:
    """``Key: value`` lines of the message's last paragraph (keys compared case-blind).

    The first occurrence of a key wins; a paragraph with any non-trailer line is
    not a trailer block, as git's own trailer rules say.
    """
    paragraphs = [p for p in message.strip().split("\n\n") if p.strip()]
    if len(paragraphs) < 2:
        return {}
    found: dict[str, str] = {}
    for line in paragraphs[-1].splitlines():
        key, sep, value = line.partition(":")
        if not sep or not key or key != key.strip() or " " in key:
            return {}
        found.setdefault(key.lower(), value.strip())
    return found


def check_name(kind: str, value: str) -> str:
    """A name that goes into a trailer must stay on its one line."""
    if not value or value != value.strip() or any(ch in value for ch in "\r\n\0"):
        raise ValueError(f"{kind} {value!r} cannot be written into a record (empty, padded or multi-line)")
    return value


_HOST = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,62}")
_VERSION = re.compile(r"[\x21-\x7e]{1,64}")


def check_host(kind: str, value: str) -> str:
    """A host name as ``sluice.host`` allows it: anything else in a record is not from a host.

    Names read from records are printed (``status``, the log): a tab, a
    control character or 5,000 characters there come from no git-sluice
    (issue #14, point 10), so such a record is garbage, never shown as a name.
    """
    if not _HOST.fullmatch(value):
        raise ValueError(f"{kind} {value[:80]!r} is not a host name ([A-Za-z0-9._-], 63 at most)")
    return value


@record(frozen=True)
class LeaseRecord:
    """What a lease ref's commit message says: who holds, as what, for how long."""

    holder: str
    role: str
    lease: float
    renewal: int
    version: str

    def to_message(self, branch: str) -> str:
        check_name("holder", self.holder)
        check_name("version", self.version)
        if self.role not in MARK_ROLES:
            raise ValueError(f"role {self.role!r} cannot hold a lease (one of {', '.join(MARK_ROLES)})")
        if not (0 < self.lease <= MAX_LEASE) or not math.isfinite(self.lease):
            raise ValueError(f"lease {self.lease!r} s is outside (0, {MAX_LEASE:g}]")
        if self.renewal < 0:
            raise ValueError(f"renewal {self.renewal} is negative")
        lines = [
            _SUBJECT.format(branch=branch),
            "",
            f"Holder: {self.holder}",
            f"Role: {self.role}",
            f"Lease: {format_seconds(self.lease)}",
            f"Renewal: {self.renewal}",
            f"Sluice-Version: {self.version}",
        ]
        return "\n".join(lines) + "\n"

    @classmethod
    def parse(cls, message: str) -> LeaseRecord | None:
        """The record, or None when the message is anything else (garbage, foreign)."""
        trailers = parse_trailers(message)
        if any(name.lower() not in trailers for name in _TRAILERS):
            return None
        holder = trailers["holder"]
        role = trailers["role"]
        version = trailers["sluice-version"]
        if not _HOST.fullmatch(holder) or not _VERSION.fullmatch(version) or role not in MARK_ROLES:
            return None
        try:
            lease = float(trailers["lease"])
            renewal = int(trailers["renewal"])
        except ValueError:
            return None
        if not math.isfinite(lease) or not (0 < lease <= MAX_LEASE) or not 0 <= renewal <= 2**53:
            return None
        return cls(holder=holder, role=role, lease=lease, renewal=renewal, version=version)

    def renewed(self, *, role: str, lease: float, version: str) -> LeaseRecord:
        return LeaseRecord(self.holder, role, lease, (self.renewal + 1) % RENEWAL_CYCLE, version)


@record(frozen=True)
class Mark:
    """The object a lease ref points at; ``record`` None means garbage of unknown holder."""

    oid: str
    record: LeaseRecord | None

    @property
    def garbage(self) -> bool:
        return self.record is None


@record(frozen=True)
class Observation:
    """When this host first saw ``oid`` at a ref, on its monotonic clock of boot ``boot_id``."""

    oid: str
    first_seen: float
    boot_id: str
    confirmed_at: float | None = None
    """When the last successful fetch of this clone began (same clock): the mark is known
    unchanged only up to then. None: no fetch succeeded in this boot (issue #14, point 11)."""


@record(frozen=True)
class Decision:
    """What to do about one branch's mark, and why (the reason is shown to people).

    ``write_role`` is the role of the record to push for take / renew / take_over.
    """

    action: str
    reason: str
    write_role: str | None = None

    @property
    def writes(self) -> bool:
        return self.action in ("take", "renew", "take_over")


def judged_lease(record: LeaseRecord | None, lease: float) -> float:
    """How long another host's mark stands by this host's judgement: at most this host's own lease.

    Anyone who can push can write a record claiming a day (issue #14, point 3):
    a claim longer than this host's configured lease is judged by this host's,
    so no record blocks a branch for longer than the reader itself would hold it.
    """
    if record is None:
        return lease
    return min(record.lease, lease)


def _ago(seconds: float | None) -> str:
    return "never" if seconds is None else f"{format_seconds(round(seconds, 1))} s"


def renewal_deferral(*, lease: float, tick: float, margin: float) -> float:
    """How long past due a driver may hold a renewal for its tick's end (:func:`decide`'s ``defer``).

    A held renewal must never cost the tick's rounds their lease: a holder takes in
    only while its mark is more than ``margin`` (one call's deadline) from lapsing,
    so a renewal due at a third of the lease waits at most until two thirds of it,
    less that margin and half a tick for the rounds' own time. A short lease (60 s,
    a 30 s deadline) leaves nothing to wait: it renews at the tick's start, as before.
    """
    room = 2 * lease / 3 - margin - tick / 2
    return max(0.0, min(tick, room))


def _own_mark(
    role: str, record: LeaseRecord, *, now_mono: float, lease: float, last_renewed: float | None, defer: float,
) -> Decision:
    """:func:`decide` for this host's own mark: hold, or renew (now, or at the tick's end)."""
    if role == "step":
        return Decision("hold", f"this host holds the lease ({record.role})")
    write_role = "driver" if "driver" in (role, record.role) else "wait"
    threshold = lease / 3
    if role == "wait" and record.role == "driver":
        threshold = 2 * lease / 3
    if role == "driver" and record.role == "wait":
        # as a wait's mark it could be taken over at once by another host's driver
        return Decision("renew", "this host's wait mark becomes its driver's", write_role)
    if last_renewed is None:
        return Decision("renew", "this host's mark, last written at an unknown time", write_role)
    since = now_mono - last_renewed
    if since >= threshold + max(0.0, defer):
        return Decision("renew", f"this host's mark, last written {_ago(since)} ago", write_role)
    if since >= threshold:
        return Decision("hold", f"this host's mark, written {_ago(since)} ago: renewed at the tick's end")
    return Decision("hold", f"this host's mark, written {_ago(since)} ago")


def decide(
    *,
    me: str,
    role: str,
    mark: Mark | None,
    observed_for: float | None,
    now_mono: float,
    lease: float,
    last_renewed: float | None,
    defer: float = 0.0,
    overwritten: bool = False,
) -> Decision:
    """Take, renew, take over, hold, defer or do nothing about one mark.

    - no mark: a driver or a wait takes it; a step does nothing and takes in
      ("none": this host alone).
    - this host's mark: renew once a third of the lease has passed since this
      host last wrote it (``last_renewed``, monotonic; None = unknown, so renew
      now). A driver renews its host's *wait* mark at once, as a driver's (a
      wait's mark may be taken by any driver). A wait on a host whose driver
      holds the mark leaves renewing to the driver until two thirds have
      passed, and then keeps the role "driver", so a live driver's mark is
      never turned into a wait's that others may take at once. A renewal
      due for less than ``defer`` seconds is held: a driver pushes it at the
      end of its tick, in the push of the fleet's survey when one goes, so a
      tick costs the remote one push (issue 29).
    - another host's mark: a driver takes a wait's mark at once; anyone (but a
      step, which never writes) takes a mark that this host has seen unchanged
      for the mark's whole lease (``observed_for``), garbage for this host's own
      lease; otherwise defer, naming the holder.
    - garbage over a mark this host wrote less than a lease ago (``overwritten``):
      no live holder writes garbage, so a driver or a wait takes its lease back
      at once; a pusher re-pushing garbage costs the holder nothing (issue 33).
    """
    if role not in ROLES:
        raise ValueError(f"unknown role {role!r} (one of {', '.join(ROLES)})")
    if not (lease > 0):
        raise ValueError(f"lease must be positive, got {lease!r}")
    if mark is None:
        if role == "step":
            return Decision("none", "no mark on the remote: this host alone takes in")
        return Decision("take", "no mark on the remote", write_role=role)
    record = mark.record
    if record is not None and record.holder == me:
        return _own_mark(role, record, now_mono=now_mono, lease=lease, last_renewed=last_renewed, defer=defer)
    if record is None and overwritten and role != "step":
        return Decision("take_over", "garbage over this host's live lease: taken back at once", write_role=role)
    holder = record.holder if record is not None else "an unknown holder (not a lease record)"
    mark_lease = judged_lease(record, lease)
    if role == "driver" and record is not None and record.role == "wait":
        return Decision("take_over", f"a driver takes the wait mark of {holder} at once", write_role=role)
    seen = f"seen unchanged for {_ago(observed_for)} of its {format_seconds(mark_lease)} s lease"
    if record is not None and record.lease > lease:
        seen += f" (it claims {format_seconds(record.lease)} s; judged by this host's own)"
    if observed_for is not None and observed_for >= mark_lease:
        if role == "step":
            return Decision("none", f"the mark of {holder} has lapsed ({seen}): no live holder")
        return Decision("take_over", f"the mark of {holder} has lapsed ({seen})", write_role=role)
    return Decision("defer", f"held by {holder} ({seen})")


@record(frozen=True)
class LeaseView:
    """One branch's lease as this host sees it (for rounds, ``status`` and tests).

    ``age`` is by this host's own clock: since this host last wrote its own
    mark, or since it first saw another's. ``live`` says the mark is within its
    lease by that age; for this host's own mark with no known write time it is
    False (nothing vouches for it). ``note`` says what the last decision was.

    ``writer`` says the viewing role writes marks (a driver or a wait): such a
    host takes a branch in only on its own mark, won by its own
    compare-and-swap push and still live by its own clock less ``margin`` (one
    call's whole deadline, so a call started just before the end cannot outlast
    the lease). A step, which never writes, takes in where no one holds.
    ``blocked`` names a refusal that is not a race (issue #14, point 4): a
    host that could not write its mark for such a reason never takes in.
    """

    branch: str
    oid: str | None
    holder: str | None
    role: str | None
    age: float | None
    lease: float
    garbage: bool
    mine: bool
    live: bool
    record: LeaseRecord | None = None
    note: str = ""
    writer: bool = False
    margin: float = 0.0
    blocked: str | None = None

    @property
    def ref(self) -> str:
        return lease_ref(self.branch)

    @property
    def absent(self) -> bool:
        return self.oid is None

    @property
    def holding(self) -> bool:
        """This host's own mark, live by its own clock with a call's deadline to spare."""
        return (
            self.mine
            and self.live
            and self.age is not None
            and self.age + self.margin < self.lease
        )

    @property
    def takes_in(self) -> bool:
        """This host takes the branch in now.

        A writer: only on its own live mark (never on "no mark" or a lapsed one:
        those mean its own push did not win). A step: no mark, its own live
        mark, or a lapsed one. Nobody, while a refusal blocks the lease.
        """
        if self.blocked is not None:
            return False
        if self.writer:
            return self.holding
        if self.mine:
            return self.holding
        return self.oid is None or not self.live

    def describe(self) -> str:
        if self.blocked is not None:
            return f"{self.branch}: the lease cannot be written ({self.blocked}); not taking it in"
        if self.oid is None:
            return f"{self.branch}: no lease (this host alone)"
        who = "this host" if self.mine else (self.holder or "unknown holder")
        kind = "garbage mark" if self.garbage else f"{self.role} lease"
        state = "live" if self.live else "lapsed"
        return f"{self.branch}: {kind} of {who}, {_ago(self.age)} old, {state}"

    def with_note(self, note: str) -> LeaseView:
        return dataclasses.replace(self, note=note)

    def with_block(self, reason: str) -> LeaseView:
        return dataclasses.replace(self, blocked=reason, note=f"refused by the remote: {reason}")


def lease_view(
    *,
    branch: str,
    me: str,
    mark: Mark | None,
    observed_for: float | None,
    written_ago: float | None,
    lease: float,
    note: str = "",
    writer: bool = False,
    margin: float = 0.0,
) -> LeaseView:
    """Summarise a mark for people and rounds; ``lease`` is this host's configured one.

    Another host's mark is judged by at most this host's own lease
    (:func:`judged_lease`); one never observed by a successful fetch
    (``observed_for`` None) counts as live.
    """
    if mark is None:
        return LeaseView(branch, None, None, None, None, lease, False, False, False, None, note, writer, margin)
    record = mark.record
    mine = record is not None and record.holder == me
    if mine:
        effective = record.lease if record is not None else lease
        age = written_ago
        live = written_ago is not None and written_ago < effective
        if age is None:
            age = observed_for
    else:
        effective = judged_lease(record, lease)
        age = observed_for
        live = observed_for is None or observed_for < effective
    return LeaseView(
        branch=branch,
        oid=mark.oid,
        holder=record.holder if record is not None else None,
        role=record.role if record is not None else None,
        age=age,
        lease=effective,
        garbage=record is None,
        mine=mine,
        live=live,
        record=record,
        note=note,
        writer=writer,
        margin=margin,
    )
