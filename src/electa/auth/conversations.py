"""Conversation ids a browser cannot guess or borrow.

A conversation's stored turns are its history: whoever names its id continues it and reads its
earlier question back (in ``done.search_query``). An organisation's backend (ingest or admin
key) names its own ids. A browser-facing credential (search key, visitor token) gets its ids
from the server: its first ask sends none, and ``done.conversation_id`` carries a new one,
``cv_<128 random bits>.<MAC>``, where the MAC (HMAC-SHA256 under a secret of this data directory)
binds it to that credential. Sent back by the same credential it continues the conversation;
sent by any other, or made up, it is refused.

>>> ids = ConversationIds(b"k" * 32)
>>> cid = ids.issue("key:7")
>>> ids.valid(cid, "key:7"), ids.valid(cid, "key:8"), ids.valid("cv_guess.xyz", "key:7"), ids.valid("cv_x.é", "key:7")
(True, False, False, False)
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets

PREFIX = "cv_"
# What ``issue`` makes: URL-safe base64 of 16 random bytes, a dot, of a 16-byte MAC.
_SHAPE = re.compile(r"cv_[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{22}")


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


class ConversationIds:
    """Issues and checks conversation ids bound to one credential (``owner``)."""

    def __init__(self, secret: bytes) -> None:
        if len(secret) < 16:
            raise ValueError("the conversation secret must hold at least 16 bytes")
        self._secret = secret

    def _mac(self, owner: str, nonce: str) -> str:
        return _b64(hmac.new(self._secret, f"{owner}\x00{nonce}".encode(), hashlib.sha256).digest()[:16])

    def issue(self, owner: str) -> str:
        nonce = _b64(secrets.token_bytes(16))
        return f"{PREFIX}{nonce}.{self._mac(owner, nonce)}"

    def valid(self, conversation_id: str, owner: str) -> bool:
        if not _SHAPE.fullmatch(conversation_id):
            return False
        nonce, mac = conversation_id[len(PREFIX):].split(".")
        return hmac.compare_digest(mac.encode(), self._mac(owner, nonce).encode())
