"""The fonts an office document names, and those the system stands in for with other widths.

Imported by bridge.py: it runs in the bridge's process (not the daemon's), with the environment
soffice has, so fontconfig answers here as it answers LibreOffice. The names are read from the
file's own XML (the text fonts of Word, Excel and PowerPoint files and of OpenDocument), bounded
in what is read, so a hostile package costs little. Binary formats (doc, xls, ppt, rtf) are not read.
"""

import html
import re
import subprocess
import zipfile

MAX_PART_BYTES = 8 * 1024 * 1024
MAX_WARNINGS = 20

# Faces fontconfig's metric aliases give for a font with the same widths (fontconfig's
# 30-metric-aliases.conf, Carlito's and Caladea's own): such a stand-in keeps lines and pages.
METRIC_COMPATIBLE = {
    "arial": {"liberation sans", "arimo", "albany", "albany amt", "nimbus sans", "nimbus sans l"},
    "helvetica": {"liberation sans", "arimo", "nimbus sans", "nimbus sans l", "texgyreheros"},
    "arial narrow": {"liberation sans narrow", "nimbus sans narrow"},
    "times new roman": {"liberation serif", "tinos", "thorndale", "thorndale amt", "nimbus roman", "nimbus roman no9 l"},
    "times": {"liberation serif", "tinos", "nimbus roman", "nimbus roman no9 l", "texgyretermes"},
    "courier new": {"liberation mono", "cousine", "cumberland", "cumberland amt", "nimbus mono ps", "nimbus mono l"},
    "courier": {"liberation mono", "cousine", "nimbus mono ps", "nimbus mono l", "texgyrecursor"},
    "calibri": {"carlito"},
    "cambria": {"caladea"},
    "georgia": {"gelasio"},
    "symbol": {"standard symbols ps", "standard symbols l"},
    "palatino": {"p052", "texgyrepagella"},
    "palatino linotype": {"p052", "texgyrepagella"},
    "book antiqua": {"p052", "texgyrepagella"},
    "bookman old style": {"urw bookman", "texgyrebonum"},
    "century schoolbook": {"c059", "texgyreschola"},
    "century gothic": {"urw gothic", "texgyreadventor"},
    # URW's fonts under the names of their older release (gsfonts, "... L"): fontconfig gives the
    # same designs under today's names (fonts-urw-base35).
    "nimbus sans l": {"nimbus sans", "liberation sans", "arimo"},
    "nimbus roman no9 l": {"nimbus roman", "liberation serif", "tinos"},
    "nimbus mono l": {"nimbus mono ps", "liberation mono", "cousine"},
    "urw palladio l": {"p052"},
    "urw bookman l": {"urw bookman"},
    "urw gothic l": {"urw gothic"},
    "century schoolbook l": {"c059"},
    "urw chancery l": {"z003"},
    "standard symbols l": {"standard symbols ps"},
    "dingbats": {"d050000l"},
}

# Names LibreOffice itself replaces before fontconfig is asked (its VCL substitution table):
# StarOffice's symbol font is OpenSymbol, which LibreOffice brings.
LIBREOFFICE_NAMES = {"starsymbol": "OpenSymbol", "star symbol": "OpenSymbol"}

WORD_PARTS = re.compile(r"^word/(document|styles|numbering|footnotes|endnotes|header\d*|footer\d*)\.xml$")
WORD_FONT = re.compile(rb'w:(?:ascii|hAnsi)="([^"]+)"')
WORD_THEME = re.compile(rb'w:(?:ascii|hAnsi)Theme="(minor|major)')
SHEET_FONT = re.compile(rb'<(?:x:)?name val="([^"]+)"')
SLIDE_PARTS = re.compile(r"^ppt/(slides|slideMasters|slideLayouts)/[^/]+\.xml$")
SLIDE_FONT = re.compile(rb'<a:latin typeface="([^"]+)"')
THEME_FONT = re.compile(rb'<a:(minor|major)Font>\s*<a:latin typeface="([^"]+)"')
ODF_FACE = re.compile(rb'<style:font-face [^>]*?style:name="([^"]+)"[^>]*?svg:font-family="([^"]+)"')
# OpenDocument gives each style three fonts: for Latin text, for Chinese, Japanese and Korean
# (asian), and for right-to-left and Indic scripts (complex). LibreOffice's own styles name an
# asian and a complex font in every document; they set nothing in one without such text.
ODF_USED = re.compile(rb'style:font-name(-asian|-complex)?="([^"]+)"')
ASIAN_TEXT = re.compile("[\u1100-\u11ff\u2e80-\u9fff\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef]")
COMPLEX_TEXT = re.compile("[\u0590-\u08ff\u0900-\u0dff\u0e00-\u0eff\u0f00-\u0fff\u1000-\u109f\u1780-\u17ff\ufb1d-\ufdff\ufe70-\ufeff]")

WORD = {"docx", "docm", "dotx", "dotm"}
SHEETS = {"xlsx", "xlsm", "xltx", "xltm"}
SLIDES = {"pptx", "pptm", "potx", "potm", "ppsx"}
ODF = {"odt", "ods", "odp", "odg", "ott", "ots", "otp", "otg"}
FLAT_ODF = {"fodt", "fods", "fodp", "fodg"}


def part(archive, name):
    """A part's bytes, up to MAX_PART_BYTES (a larger one is read that far)."""
    try:
        with archive.open(name) as stream:
            return stream.read(MAX_PART_BYTES)
    except (KeyError, zipfile.BadZipFile, OSError, RuntimeError, EOFError, ValueError):
        return b""


def attribute(value):
    """An XML attribute's text: the file's bytes with their character references read (&apos;, &amp;...)."""
    return html.unescape(value.decode("utf-8", "replace"))


def theme_fonts(archive, path):
    return {kind.decode(): attribute(face) for kind, face in THEME_FONT.findall(part(archive, path))}


def odf_fonts(xml_parts):
    faces = {}
    used = set()
    for xml in xml_parts:
        for name, family in ODF_FACE.findall(xml):
            # A family with a space in it is quoted in the attribute ("'Liberation Sans'").
            faces[name] = attribute(family).strip().strip("'\"")
        used.update(ODF_USED.findall(xml))
    fonts = {faces[name] for script, name in used if script == b"" and name in faces}
    # The text is decoded (once) and searched only for a script whose fonts are not among those already.
    text = None
    for script, letters in ((b"-asian", ASIAN_TEXT), (b"-complex", COMPLEX_TEXT)):
        named = {faces[name] for kind, name in used if kind == script and name in faces} - fonts
        if not named:
            continue
        if text is None:
            text = "".join(xml.decode("utf-8", "replace") for xml in xml_parts)
        if letters.search(text):
            fonts |= named
    return fonts


def named_fonts(path, source):
    """The text fonts the document names, as written in it."""
    if source in FLAT_ODF:
        with open(path, "rb") as stream:
            return odf_fonts([stream.read(MAX_PART_BYTES)])
    if source not in WORD | SHEETS | SLIDES | ODF:
        return set()
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, ValueError):
        return set()
    with archive:
        names = [info.filename for info in archive.infolist()[:10000]]
        if source in ODF:
            return odf_fonts([part(archive, name) for name in ("styles.xml", "content.xml") if name in names])
        fonts = set()
        if source in WORD:
            themes_used = set()
            for name in filter(WORD_PARTS.match, names):
                xml = part(archive, name)
                fonts.update(attribute(face) for face in WORD_FONT.findall(xml))
                themes_used.update(kind.decode() for kind in WORD_THEME.findall(xml))
            theme = theme_fonts(archive, "word/theme/theme1.xml")
            fonts.update(theme[kind] for kind in themes_used if kind in theme)
        elif source in SHEETS:
            fonts.update(attribute(face) for face in SHEET_FONT.findall(part(archive, "xl/styles.xml")))
        else:
            theme = theme_fonts(archive, "ppt/theme/theme1.xml")
            for name in filter(SLIDE_PARTS.match, names):
                for face in SLIDE_FONT.findall(part(archive, name)):
                    face = attribute(face)
                    fonts.add(theme.get("major" if face.startswith("+mj") else "minor", "") if face.startswith("+") else face)
        return {font for font in fonts if font and not font.startswith("+")}


_matched = {}


def matched(font):
    """
    The family fontconfig gives for the name, as LibreOffice asks it, and every name of that face
    (its families and full names: a document may name "Noto Sans Regular"); cached for the bridge's life.
    """
    if font not in _matched:
        try:
            done = subprocess.run(["fc-match", "--format", "%{family}\\n%{fullname}", font], capture_output=True, timeout=10, check=False)
            families, _, full_names = done.stdout.decode("utf-8", "replace").partition("\n") if done.returncode == 0 else ("", "", "")
            names = [name.strip() for name in families.split(",") + full_names.split(",") if name.strip()]
            _matched[font] = (names[0] if families.strip() else "", {folded(name) for name in names})
        except (OSError, subprocess.SubprocessError):
            _matched[font] = ("", set())
    return _matched[font]


def folded(name):
    return " ".join(name.lower().split())


def substituted(path, source):
    """Warnings for each named font the system has neither itself nor a metric-compatible face of."""
    warnings = []
    for font in sorted(named_fonts(path, source)):
        name = folded(font)
        # The name LibreOffice asks fontconfig for, where it replaces the document's itself.
        asked = LIBREOFFICE_NAMES.get(name, font)
        used, names = matched(asked)
        if not used or name in names or folded(asked) in names or folded(used) in METRIC_COMPATIBLE.get(name, ()):
            continue
        warnings.append({
            "code": "font_substituted",
            "font": font,
            "used": used,
            "message": 'The document names the font "%s", which is not installed here: its text is set in "%s", whose letters may be wider or narrower, so lines and pages may break elsewhere.' % (font, used),
        })
        if len(warnings) == MAX_WARNINGS:
            break
    return warnings
