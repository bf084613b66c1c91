"""Links taken out of a Word or Excel file before LibreOffice renders it (rendering.py).

An OOXML package can point outside itself, and LibreOffice follows some of those pointers when
it opens the file: a picture whose relationship has TargetMode="External" and a `file:///...`
target is read from the renderer's disk and drawn on the page. `strip_links` writes a copy of
the package with every such pointer removed:

- every relationship with TargetMode="External" (pictures, OLE links, sub-documents, attached
  templates, frames, external workbooks, hyperlinks), and every relationship whose target is a
  URL, a drive or a network path rather than a part of the package;
- relationships to parts that load other files or data sources: altChunk (a foreign file
  merged into a Word document), sub-documents, attached templates, frames, and an Excel
  workbook's data connections and query tables (web and text queries);
- Word fields that include or link another file or program (INCLUDETEXT, INCLUDEPICTURE,
  INCLUDE, IMPORT, LINK, DDE, DDEAUTO, DATABASE), in fldSimple and in complex fields: the field
  keeps its last result (the text Word showed) and loses its instruction;
- `src` and `href` attributes of VML shapes (a legacy picture can name its file there).

The package is checked first as an upload is (containers.zip_open: member count, unpacked size,
zip-bomb ratio; formats: the XML's unpacked size), and one whose part names repeat (two
members that a reader could take for the same part) is refused. Parts that need no change are
copied as they are. What was removed is counted by kind, for the rendition's record.

This is one layer of two: LibreOffice also runs where no other file of the store or of the
system is visible (rendering.py), which holds for whatever this does not know about.
"""

import re
import shutil
import zipfile
from collections import Counter
from pathlib import Path

from lxml import etree

from apps.documents import containers, formats
from lexweb.errors import DomainError

_RELS = "{http://schemas.openxmlformats.org/package/2006/relationships}Relationship"
_W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
_VML_NAMESPACES = {"urn:schemas-microsoft-com:vml", "urn:schemas-microsoft-com:office:office"}
_VML_LINK_ATTRIBUTES = {"src", "href"}

# A target that is not a part of the package: a URL (file:, http:, ... and a drive letter
# such as C:), or a network path (//host/share, \\host\share).
_NOT_A_PART = re.compile(r"^\s*(?:[a-z][a-z0-9+.-]*:|[\\/]{2})", re.IGNORECASE)
# Relationship types (the last segment of the Type URI) whose part loads other files or data.
_LOADING_TYPES = {
    "afchunk",
    "subdocument",
    "attachedtemplate",
    "frame",
    "connections",
    "querytable",
}
_LINKING_FIELDS = {
    "INCLUDETEXT",
    "INCLUDEPICTURE",
    "INCLUDE",
    "IMPORT",
    "LINK",
    "DDE",
    "DDEAUTO",
    "DATABASE",
}
# Bytes that mark a part worth parsing: Word fields, VML, relationships, and entity
# declarations (which could spell any of them); as UTF-8, a part in UTF-16 is always parsed.
_MARKERS = (
    b"fldSimple",
    b"instrText",
    b"urn:schemas-microsoft-com:vml",
    b"Relationship",
    b"<!ENTITY",
)
# An entity whose text is another file or address (XML's own external link).
_EXTERNAL_ENTITY = re.compile(r"<!ENTITY\s+(?:%\s+)?\S+\s+(?:SYSTEM|PUBLIC)\b")
_SVG = "{http://www.w3.org/2000/svg}svg"
_PARSER = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=True)
# Excel writes VML drawings that are not well-formed XML (an unclosed <br>): read leniently.
_LENIENT = etree.XMLParser(
    resolve_entities=False, no_network=True, load_dtd=False, huge_tree=True, recover=True
)
_DAMAGED = "The Office file is damaged and cannot be rendered; open and save it again."


def strip_links(source: Path, target: Path) -> Counter[str]:
    """Write `source` (a Word or Excel package) to `target` without its links (see the module
    docstring); what was removed, counted by kind. DomainError for a package that is refused."""
    removed: Counter[str] = Counter()
    with containers.zip_open(source) as archive:
        formats.check_xml_size(archive)
        members = archive.infolist()
        names = [member.filename.replace("\\", "/").lower() for member in members]
        if len(set(names)) != len(names):
            raise DomainError(
                "The Office file holds two parts of the same name; it is not rendered."
            )
        with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as out:
            for member in members:
                if member.is_dir():
                    continue
                with archive.open(member) as part:
                    head = part.read(4096)
                    if not _worth_parsing(member.filename, head):
                        with out.open(_copy_info(member), "w") as copy:
                            copy.write(head)
                            shutil.copyfileobj(part, copy, 1024 * 1024)
                        continue
                    data = head + part.read()
                out.writestr(_copy_info(member), _cleaned(member.filename, data, removed))
    return removed


def _copy_info(member: zipfile.ZipInfo) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(member.filename, date_time=member.date_time)
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = member.external_attr
    return info


def _worth_parsing(name: str, head: bytes) -> bool:
    if name.lower().endswith(".rels"):
        return True
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if head.startswith((b"\xff\xfe", b"\xfe\xff")) or b"\x00" in head[:4]:
        return True  # UTF-16 (or something odd): parse and see
    return text.startswith(b"<")


def _cleaned(name: str, data: bytes, removed: Counter[str]) -> bytes:
    """The part with its links removed; the same bytes when it has none."""
    if not name.lower().endswith(".rels") and not _has_marker(data):
        return data
    text = _as_text(data)
    if _EXTERNAL_ENTITY.search(text):
        raise DomainError(
            "The Office file declares an XML entity that is another file or address; it is "
            "not rendered."
        )
    entities = "<!ENTITY" in text
    try:
        root = etree.fromstring(data, _PARSER)
    except etree.XMLSyntaxError:
        if name.lower().endswith(".rels"):
            raise DomainError(_DAMAGED) from None
        try:
            lenient = etree.fromstring(data, _LENIENT)
        except etree.XMLSyntaxError:
            lenient = None
        if lenient is None:
            return data  # not XML after all: LibreOffice's to judge
        root = lenient
    if entities:
        # Word and Excel never declare entities; drawing programs do in SVG pictures (those
        # are LibreOffice's to read, in the sandbox). Elsewhere they could spell a link that
        # is not in the bytes: refused.
        if root.tag == _SVG:
            return data
        raise DomainError(
            "The Office file declares XML entities, which Word and Excel never write; it is "
            "not rendered. Open and save it again in Word or Excel."
        )
    before = sum(removed.values())
    if name.lower().endswith(".rels"):
        _strip_relationships(root, removed)
    _strip_fields(root, removed)
    _strip_vml_links(root, removed)
    if sum(removed.values()) == before:
        return data
    return etree.tostring(root, xml_declaration=True, encoding="UTF-8", standalone=True)


def _as_text(data: bytes) -> str:
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return data.decode("utf-16", "replace")
    return data.decode("utf-8", "replace").replace("\x00", "")  # UTF-16 without a mark, too


def _has_marker(data: bytes) -> bool:
    if data[:2] in (b"\xff\xfe", b"\xfe\xff") or b"\x00" in data[:4]:
        return True
    return any(marker in data for marker in _MARKERS)


def _strip_relationships(root: etree._Element, removed: Counter[str]) -> None:
    for relationship in list(root.iter(_RELS)):
        mode = (relationship.get("TargetMode") or "").strip().lower()
        kind = (relationship.get("Type") or "").rstrip("/").rsplit("/", 1)[-1].lower()
        if mode == "external" or _NOT_A_PART.match(relationship.get("Target") or ""):
            removed[f"external relationship ({kind or 'untyped'})"] += 1
        elif kind in _LOADING_TYPES:
            removed[f"linked part ({kind})"] += 1
        else:
            continue
        parent = relationship.getparent()
        if parent is not None:
            parent.remove(relationship)


def _keyword(instruction: str) -> str:
    words = instruction.replace("\u00a0", " ").split()
    return words[0].upper() if words else ""


def _strip_fields(root: etree._Element, removed: Counter[str]) -> None:
    # Simple fields: the element goes, its result (the runs inside) stays in its place.
    for field in list(root.iter(f"{{{_W}}}fldSimple")):
        keyword = _keyword(field.get(f"{{{_W}}}instr") or "")
        if keyword in _LINKING_FIELDS:
            removed[f"field {keyword}"] += 1
            parent = field.getparent()
            if parent is not None:
                at = parent.index(field)
                for offset, child in enumerate(list(field)):
                    parent.insert(at + offset, child)
                parent.remove(field)
    # Complex fields: begin, instruction runs, separate, result runs, end (fields nest). A
    # linking field's instruction is emptied; LibreOffice shows its result as plain text.
    instructions = (f"{{{_W}}}instrText", f"{{{_W}}}delInstrText")
    open_fields: list[list[etree._Element]] = []
    in_instruction: list[bool] = []
    for element in root.iter(f"{{{_W}}}fldChar", *instructions):
        if element.tag in instructions:
            if open_fields and in_instruction[-1]:
                open_fields[-1].append(element)
            continue
        kind = element.get(f"{{{_W}}}fldCharType")
        if kind == "begin":
            open_fields.append([])
            in_instruction.append(True)
        elif kind == "separate" and open_fields:
            in_instruction[-1] = False
        elif kind == "end" and open_fields:
            parts = open_fields.pop()
            in_instruction.pop()
            keyword = _keyword("".join(part.text or "" for part in parts))
            if keyword in _LINKING_FIELDS:
                removed[f"field {keyword}"] += 1
                for part in parts:
                    part.text = ""
    # A field left open at the end of the part (a damaged file) is checked all the same.
    for parts in open_fields:
        keyword = _keyword("".join(part.text or "" for part in parts))
        if keyword in _LINKING_FIELDS:
            removed[f"field {keyword}"] += 1
            for part in parts:
                part.text = ""


def _strip_vml_links(root: etree._Element, removed: Counter[str]) -> None:
    for element in root.iter():
        if not isinstance(element.tag, str):
            continue  # comments, processing instructions
        namespace, _ = _split(element.tag)
        for attribute in list(element.attrib):
            owner, name = _split(attribute)
            if name.lower() in _VML_LINK_ATTRIBUTES and (owner or namespace) in _VML_NAMESPACES:
                removed["VML link attribute"] += 1
                del element.attrib[attribute]


def _split(tag: str) -> tuple[str | None, str]:
    """A Clark name's namespace and local name ("{ns}name")."""
    if tag.startswith("{"):
        namespace, _, name = tag[1:].partition("}")
        return namespace, name
    return None, tag
