"""A lease as a person reads it (issue 31): the branch once, an age in words, never a stale "live".

Beside :class:`~.lease_record.LeaseView` (whose ``describe`` the rounds' own
decisions keep): ``lease``, ``status``, ``drive`` and a round that stops for
a lapsed lease print these words, which say what the view is as of — the
last fetch (:class:`Fetched`), or the remote just now (:class:`RemoteLook`).
"""

from __future__ import annotations

from ..durations import format_duration
from ..records import record
from .lease_record import LEASE_PREFIX, LeaseView


@record(frozen=True)
class RemoteLook:
    """What ``git ls-remote`` said of the lease refs just now: ``{ref: oid}``, or why it could not say."""

    refs: dict[str, str]
    error: str | None = None

    def oid(self, branch: str) -> str | None:
        return self.refs.get(LEASE_PREFIX + branch)


@record(frozen=True)
class Fetched:
    """When the mirror a lease view reads was last the remote's: seconds since the last fetch began
    (None: no fetch succeeded since this boot)."""

    since: float | None

    def ago(self) -> str:
        if self.since is None:
            return "before this boot"
        return "just now" if self.since < 1 else f"{format_duration(self.since)} ago"

    def words(self) -> str:
        """``as last fetched 5 min ago``."""
        return "as last fetched " + ("before this boot (none since)" if self.since is None else self.ago())


def lease_words(view: LeaseView, *, fetched: Fetched | None = None, look: RemoteLook | None = None,
                named: bool = True) -> str:
    """One lease as a person reads it: the branch once, an age in words, never a stale "live" (issue 31).

    ``fetched`` says what the view is as of (None: a fetch just now, as a
    driver's tick; this host's own mark needs none either: its own clock ages
    it). ``look``, the remote's lease refs just now: where the remote no
    longer has the mark the view read, the line says what the remote has.
    ``named=False``: without the leading ``branch: `` (a sentence that named it).
    """
    text = _words(view, fetched, look)
    return text if named else text[len(view.branch) + 2:]


def _words(view: LeaseView, fetched: Fetched | None, look: RemoteLook | None) -> str:
    if view.blocked is not None:
        return f"{view.branch}: the lease cannot be written ({view.blocked}); not taking it in"
    if look is not None and look.error is None and look.oid(view.branch) != view.oid:
        return _moved_words(view, look.oid(view.branch), fetched)
    as_of = "" if fetched is None or (look is not None and look.error is None) else fetched.words()
    if view.oid is None:
        return f"{view.branch}: no lease (this host alone)" + (f", {as_of}" if as_of else "") + _unasked(look)
    who = "this host" if view.mine else (view.holder or "an unknown holder")
    kind = "garbage mark" if view.garbage else f"{view.role} lease"
    age = "age unknown (no fetch has seen it since this boot)" if view.age is None \
        else f"{format_duration(view.age)} old"
    state = "live" if view.live else "lapsed"
    text = f"{view.branch}: {kind} of {who}, {age}, {state}"
    if as_of and (not view.mine or look is not None):
        text += f" {as_of}"
    return text + _unasked(look)


def _unasked(look: RemoteLook | None) -> str:
    return "" if look is None or look.error is None else f"; the remote could not be asked ({look.error})"


def _moved_words(view: LeaseView, now_oid: str | None, fetched: Fetched | None) -> str:
    """The remote's lease ref is not what the mirror holds: say what each says, claim nothing live."""
    was = "no lease" if view.oid is None else \
        f"{'this host' if view.mine else (view.holder or 'an unknown holder')}'s {view.role or 'unreadable'} lease"
    last = "the last fetch" + (f" ({fetched.ago()})" if fetched is not None else "")
    if now_oid is None:
        return f"{view.branch}: no lease on the remote now ({last} had {was}: let go or taken back since)"
    return (f"{view.branch}: the lease moved on the remote since {last}, which had {was}; "
            "the next round's fetch reads whose it is now")
