"""Reading an upload's parts within HINDSIGHT_MAX_UPLOAD_BYTES."""

from fastapi import UploadFile

from indexing.errors import TooLarge


async def read_within(files: list[UploadFile], limit: int) -> list[bytes]:
    """Each part's bytes; 413 once their total exceeds `limit` (no part is read past it)."""
    out, total = [], 0
    for upload in files:
        data = await upload.read(limit + 1)
        total += len(data)
        if total > limit:
            raise TooLarge(f"upload exceeds the limit of {limit} bytes (HINDSIGHT_MAX_UPLOAD_BYTES)")
        out.append(data)
    return out
