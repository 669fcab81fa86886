"""Revalidation against kept answers: every GET is conditional; a 304 is answered from the kept body.

GitHub does not count an authorised 304 against the primary allowance, so a
GET whose answer has not moved costs nothing but the round trip. A 200 with
a validator is kept for next time; any other answer to a GET still confirms
the address (its lock's mark moves, its failure memory clears), which is what
single flight's waiters watch for.
"""

from __future__ import annotations

import httpx

from .layers import REVALIDATED, STORED, KeptLayer, call_of, kept_response, meta_of

CONDITIONS = ("If-None-Match", "If-Modified-Since")


class Revalidate(KeptLayer):
    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.method != "GET":
            return self.inner.handle_request(request)
        address = call_of(request).address
        meta = meta_of(request, self.kept)
        kept = self.kept.body(address, meta)
        if kept is not None:
            if meta.etag:
                request.headers[CONDITIONS[0]] = meta.etag
            if meta.last_modified:
                request.headers[CONDITIONS[1]] = meta.last_modified
        response = self.inner.handle_request(request)
        if response.status_code == 304 and kept is None:
            # GitHub confirmed a body we no longer have: ask again, unconditionally
            self.kept.forget_validators(meta)
            for name in CONDITIONS:
                request.headers.pop(name, None)
            response = self.inner.handle_request(request)
        now = self.clock.time()
        if response.status_code == 304 and kept is not None:
            self.stats.not_modified += 1
            self.kept.confirm(meta, now)  # a 304 writes no file: the lock's mark tells any waiter
            return kept_response(request, kept, **{REVALIDATED: True})
        headers = {k.lower(): v for k, v in response.headers.items()}
        if response.status_code == 200 and ("etag" in headers or "last-modified" in headers):
            self.kept.store_full(meta, 200, headers, response.read(), now)
            response.extensions = {**response.extensions, STORED: True}
        else:
            self.kept.confirm(meta, now)
        return response

    def close(self) -> None:
        self.inner.close()
