"""``mem.answers`` lives in amem_db/client/answers.py; this name is kept for imports."""

from .client.answers import Answers

__all__ = ["Answers"]
