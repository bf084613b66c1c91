"""ZIP files, decided by their central directory before a byte is inflated.

Every ZIP (an archive, and the Word and Excel files that are ZIPs too) is checked whole before it
is read (zip_open): its member count, the total its members unpack to, and how much each large
member and the whole unpack relative to their compressed size (a zip bomb). A ZIP over any limit
is refused whole and nothing of it is stored.

An archive's members (archive_members) are then each taken on their own: a member whose name
climbs out of the archive (`../`, an absolute path, a drive letter), a symbolic link, or an
encrypted member is refused with its reason, and the others still go in. Limits (settings):

- LEXWEB_ZIP_MAX_MEMBERS: members of one ZIP (and of one upload's nested archives together);
- LEXWEB_ZIP_MAX_BYTES: bytes they unpack to (the same, together);
- LEXWEB_ZIP_MAX_RATIO: unpacked / compressed, for the whole ZIP and for each member over
  RATIO_FLOOR bytes (small files of repeated text compress well and are harmless);
- LEXWEB_MAX_NESTING: how deep containers (ZIP, e-mail, Outlook) may sit inside each other.
"""

import stat
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO

from django.conf import settings

from lexweb.errors import DomainError
from lexweb.text import printable

RATIO_FLOOR = 1024 * 1024
# A member's path as shown (notes, the archive's text, its derivation): printable, this long.
MAX_MEMBER_NAME = 500
_DAMAGED_ZIP = "The ZIP file is damaged or truncated and cannot be read."


@contextmanager
def zip_open(path: Path) -> Iterator[zipfile.ZipFile]:
    """The ZIP at `path`, open, once its central directory is within the limits."""
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError):
        raise DomainError(_DAMAGED_ZIP) from None
    with archive:
        zip_check(archive.infolist(), compressed=path.stat().st_size)
        yield archive


def zip_check(members: list[zipfile.ZipInfo], *, compressed: int) -> None:
    """Refuse a ZIP bomb by what the central directory declares (zipfile never inflates a
    member past its declared size: it stops there and reports the CRC mismatch)."""
    limit = settings.LEXWEB_ZIP_MAX_MEMBERS
    if len(members) > limit:
        raise DomainError(
            f"The ZIP file has {len(members):,} members; the limit is {limit:,}. Split it and "
            "upload the parts."
        )
    unpacked = sum(member.file_size for member in members)
    if unpacked > settings.LEXWEB_ZIP_MAX_BYTES:
        raise DomainError(
            f"The ZIP file unpacks to {unpacked:,} bytes; the limit is "
            f"{settings.LEXWEB_ZIP_MAX_BYTES:,}. Split it and upload the parts."
        )
    ratio = settings.LEXWEB_ZIP_MAX_RATIO
    bombs = [
        member
        for member in members
        if member.file_size > RATIO_FLOOR
        and member.file_size > ratio * max(member.compress_size, 1)
    ]
    if bombs or (unpacked > RATIO_FLOOR and unpacked > ratio * max(compressed, 1)):
        raise DomainError(
            f"The ZIP file unpacks to more than {ratio} times its size (a possible zip bomb); "
            "it was not opened."
        )


@dataclass(frozen=True)
class Member:
    """One member of an archive: `name` is its path inside it (printable, at most
    MAX_MEMBER_NAME characters); `refused` the reason it is not taken (empty when it is)."""

    info: zipfile.ZipInfo
    name: str
    refused: str = ""


def archive_members(path: Path) -> list[Member]:
    """The archive's files in the archive's order (folders left out), each with the reason it
    is refused, if it is. Raises DomainError when the whole ZIP is refused (zip_open)."""
    with zip_open(path) as archive:
        infos = archive.infolist()
    return [_member(info) for info in infos if not info.is_dir()]


def archive_listing(path: Path) -> str:
    """The archive's text for search: one line per member, its path and size."""
    lines = [f"ZIP archive, {len(members := archive_members(path))} files:"]
    for member in members:
        note = f" (not added: {member.refused})" if member.refused else ""
        lines.append(f"{member.name}\t{member.info.file_size:,} bytes{note}")
    return "\n".join(lines)


def _member(info: zipfile.ZipInfo) -> Member:
    path = info.filename.replace("\\", "/")
    name = printable(path)[:MAX_MEMBER_NAME]
    if (
        path.startswith("/")
        or (len(path) > 1 and path[1] == ":")
        or ".." in PurePosixPath(path).parts
        or "\x00" in path
    ):
        return Member(info, name, "its name points outside the archive (path traversal)")
    if stat.S_ISLNK(info.external_attr >> 16):
        return Member(info, name, "it is a symbolic link")
    if info.flag_bits & 0x1:
        return Member(info, name, "it is encrypted (password-protected)")
    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        return Member(info, name, "it is compressed with a method lexweb does not read")
    return Member(info, name)


class MemberReader:
    """A member's bytes as a file, its damage (bad CRC, truncated data) a DomainError."""

    def __init__(self, archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> None:
        self._source: IO[bytes] = archive.open(info)

    def read(self, size: int = -1) -> bytes:
        try:
            return self._source.read(size)
        except (zipfile.BadZipFile, zlib.error, EOFError, OSError):
            raise DomainError("Its data in the ZIP file is damaged.") from None

    def close(self) -> None:
        self._source.close()
