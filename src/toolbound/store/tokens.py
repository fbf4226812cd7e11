"""Token estimates: one deterministic, offline default, replaceable by the caller.

Pieces:
    Estimator        the signature of an estimator: text -> tokens
    estimate_tokens  the default: UTF-8 bytes / 4, rounded up
    MEDIA_TOKENS     what one image or file document counts
    image_tokens     what an image of a size costs (width x height / 750, rounded up)
    message_tokens   a whole message (every block) under an estimator
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

Estimator = Callable[[str], int]

BYTES_PER_TOKEN = 4


def estimate_tokens(text: str) -> int:
    """Estimate the tokens of ``text``: its UTF-8 byte count divided by 4, rounded up.

    Deterministic, needs no network and no vocabulary, and costs one encode:
    the same text always gives the same number, on every machine. An exact
    tokenizer is not used by default because the stock ``tiktoken`` downloads
    its encodings at first use, which fails offline.

    How close it is, measured offline against two real BPE vocabularies
    (o200k_base and cl100k_base, as bundled in the ``quicktok`` 0.4.0 wheel;
    not a dependency) on samples shipped with CPython 3.11:

    - Python source (60 stdlib modules, 1.7 MB): o200k averages 4.29 bytes per
      token, so this estimate is 1.07x the true count (over by about 7%).
    - English prose (the GPL-3 text): 4.7 bytes per token; the estimate is
      1.18x the true count (over by about 18%).
    - CJK text errs the other way: a CJK character is 3 UTF-8 bytes, so the
      estimate is 0.75 tokens per character. CPython's cjkencodings samples
      (Chinese, Japanese, Korean) take 0.96x-1.03x of o200k for Chinese and
      Japanese but 0.88x for Korean, and only 0.55x-0.74x of cl100k: a
      tokenizer with a smaller CJK vocabulary counts up to 1.8x this estimate.
      Budgets enforced on CJK-heavy text can therefore be exceeded by that
      factor; pass a provider's counter as the estimator where that matters.
    """
    return -(-len(text.encode("utf-8", "surrogatepass")) // BYTES_PER_TOKEN)


# A media block (image, or a document from a file) counts this many tokens: the
# Anthropic API's figure for one image at its largest unscaled size (about
# 1.15 megapixels / 750 pixels per token). Its base64 bytes are not text the
# model reads, so they are never run through the estimator.
MEDIA_TOKENS = 1600

# Pixels of context per token (Anthropic's documented estimate for images).
PIXELS_PER_TOKEN = 750


def image_tokens(width: int, height: int) -> int:
    """The context an image of this size costs, in tokens (rounded up)."""
    return -(-width * height // PIXELS_PER_TOKEN)


# Keys whose values the model does not read as text: ids, signatures, sources.
_NOT_TEXT = frozenset({"type", "id", "tool_use_id", "signature", "cache_control", "source"})


def _block_tokens(block: Any, estimator: Estimator) -> int:
    if not isinstance(block, dict):
        return estimator(json.dumps(block, ensure_ascii=False))
    kind = block.get("type")
    if kind == "text":
        return estimator(str(block.get("text", "")))
    if kind == "thinking":
        return estimator(str(block.get("thinking", "")))
    if kind == "tool_use":
        return estimator(str(block.get("name", ""))) + estimator(
            json.dumps(block.get("input"), ensure_ascii=False)
        )
    if kind == "tool_result":
        content = block.get("content", "")
        if isinstance(content, str):
            return estimator(content)
        return sum(_block_tokens(b, estimator) for b in content or ())
    if kind in ("image", "document"):
        source = block.get("source")
        if isinstance(source, dict) and source.get("type") == "text":
            return estimator(str(source.get("data", "")))
        return MEDIA_TOKENS
    # Anything else (redacted thinking, server tool blocks, blocks newer than this
    # code): its readable fields as JSON, an overestimate rather than a zero.
    rest = {k: v for k, v in block.items() if k not in _NOT_TEXT}
    return estimator(json.dumps(rest, ensure_ascii=False)) if rest else 0


def message_tokens(message: dict[str, Any], estimator: Estimator) -> int:
    """The tokens of one Anthropic-shaped message: the sum over its blocks.

    Text and thinking count as written; a tool_use counts its name and its
    JSON input; a tool_result counts its content's blocks; an image or a
    file document counts :data:`MEDIA_TOKENS`; any other block counts its
    fields other than type, ids and signatures, as JSON. Role and framing
    tokens are not counted (they are a small constant per message that no
    estimator agrees on).
    """
    content = message.get("content")
    if isinstance(content, str):
        return estimator(content)
    return sum(_block_tokens(block, estimator) for block in content or ())
