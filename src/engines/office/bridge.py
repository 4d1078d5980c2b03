"""The LibreOffice bridge of convd's office engine (src/engines/office/).

One bridge per LibreOffice instance: it starts soffice (headless, its own profile directory, a
named pipe of its own), connects to it over UNO and converts one document at a time. Requests are
JSON lines on stdin; answers are JSON lines on file descriptor 3 (see
src/engines/process/helper-process.ts): {"type": "ready"} once connected, then per request any
number of {"type": "event", "event": {"progress": ...}} (what LibreOffice's progress indicator
was told while it wrote the result, when the request asks with "exportIndicator": office/progress.ts
reads them) and one
{"type": "result", "ok": true, "value": {...}} or {"type": "result", "ok": false, "error": {...}}.
A converted document's result says "settling": the file is written, and the bridge closes the
document after answering, then sends {"type": "settled"}; convd sends it nothing before that
(src/engines/process/helper-process.ts).

It runs under the Python that LibreOffice's `uno` module was built for (Debian: /usr/bin/python3
with python3-uno), started by convd in a process group of its own with soffice inside it, so a
time limit or a cancel kills both at once.

Usage: bridge.py SOFFICE_BIN PROFILE_DIR [SETPRIV]

A bridge whose soffice crashes (a signal such as SIGABRT or SIGSEGV, not a kill) while opening
or writing the document exits with CRASHED_ON_DOCUMENT, and convd tries the document once more another way: a
one-off `soffice --convert-to` in a profile of its own (src/engines/office/second-way.ts), which
this script runs too:

Usage: bridge.py --convert-to SOFFICE_BIN PROFILE_DIR INPUT OUTDIR CONVERT_TO INFILTER [SETPRIV]
"""

import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import traceback

import uno
import unohelper
from com.sun.star.beans import PropertyValue
from com.sun.star.connection import NoConnectException
from com.sun.star.task import XStatusIndicator

import confine
import field_scan
import flat_file
import font_names

START_TIMEOUT_S = 60
# Opened by main(): the test suites import this module to make fixtures with start_office.
ANSWERS = None
# The instance's soffice (main() sets it) and what the bridge is doing with it: "loading" from a
# request until its document is open, so that a crash there can be told from one while storing.
OFFICE = None
PHASE = "idle"

# The bridge's exit status when its soffice crashed while opening or writing a document (Debian's
# -nogui packages lack Writer's dialog files, and a Word file with comments aborts 7.4 as it lays
# them out, at either moment; a cold `soffice --convert-to` converts it), and the one-off
# conversion's when its soffice crashed (office-engine.ts and second-way.ts read them).
CRASHED_ON_DOCUMENT = 3
# How soffice ends when it crashes: its own handler re-raises the signal after printing a stack
# (SIGSEGV ends as SIGABRT). SIGKILL is not one: that is the OOM killer or someone's kill -9.
CRASH_SIGNALS = {signal.SIGABRT, signal.SIGSEGV, signal.SIGBUS, signal.SIGFPE, signal.SIGILL, signal.SIGTRAP, signal.SIGSYS}
# How long a call that failed as on a broken connection waits for its soffice to be seen gone. A
# killed soffice's sockets close before it can be reaped (the kernel closes its files, then makes
# it a zombie): a call can fail in between, and was answered as an error of the bridge with its
# traceback instead of the instance's end.
GONE_WAIT_S = 0.5

# Tests only: the office engine's `faultsForTests` setting puts these in the bridge's environment
# (never the daemon's: engineEnvironment passes no CONVD_ variable on). A document whose file name
# holds the first crashes its instance as it is opened; one holding the second crashes the one-off
# conversion's soffice too.
CRASH_ON_LOAD = os.environ.get("CONVD_TEST_CRASH_ON_LOAD") or None
CRASH_ON_STORE = os.environ.get("CONVD_TEST_CRASH_ON_STORE") or None
CRASH_ONE_OFF = os.environ.get("CONVD_TEST_CRASH_ONE_OFF") or None
# One holding this stays open this long before it is written, as on a busy box.
SLOW_BEFORE_STORE = os.environ.get("CONVD_TEST_SLOW_BEFORE_STORE") or None
SLOW_FOR_TESTS_S = 1.5
# How long soffice may take to end after the tests' SIGABRT. Its own crash handler can hang instead
# (it takes locks the interrupted thread may hold: once in CI, 40 minutes on a futex with every
# signal blocked, and the test with it); past this it is killed and counted as the crash it was
# made to be. Set when that happened.
TEST_ABORT_WAIT_S = 10
ABORTED_FOR_TESTS = False

# The profile's settings: linked images and other links of an untrusted document are not loaded
# (LibreOffice would read file:///etc/passwd or fetch a loopback URL named in a docx), and xlsx
# and ods formulas keep the results the file holds, never recalculated on load (WEBSERVICE() would
# fetch a URL). LibreOffice computes some cells regardless (every formula of an xls, an ods formula
# cell without a style, volatile functions): docs/formats.md lists them.
PROFILE_SETTINGS = """<?xml version="1.0" encoding="UTF-8"?>
<oor:items xmlns:oor="http://openoffice.org/2001/registry" xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
<item oor:path="/org.openoffice.Office.Common/Security/Scripting"><prop oor:name="BlockUntrustedRefererLinks" oor:op="fuse"><value>true</value></prop></item>
<item oor:path="/org.openoffice.Office.Common/Security/Scripting"><prop oor:name="MacroSecurityLevel" oor:op="fuse"><value>3</value></prop></item>
<item oor:path="/org.openoffice.Office.Common/Security/Scripting"><prop oor:name="DisableMacrosExecution" oor:op="fuse"><value>true</value></prop></item>
<item oor:path="/org.openoffice.Office.Calc/Formula/Load"><prop oor:name="OOXMLRecalcMode" oor:op="fuse"><value>1</value></prop></item>
<item oor:path="/org.openoffice.Office.Calc/Formula/Load"><prop oor:name="ODFRecalcMode" oor:op="fuse"><value>1</value></prop></item>
<item oor:path="/org.openoffice.Office.Common/Misc"><prop oor:name="UseLocking" oor:op="fuse"><value>false</value></prop></item>
</oor:items>
"""

# com.sun.star.document.MacroExecMode.NEVER_EXECUTE and UpdateDocMode.NO_UPDATE.
NEVER_EXECUTE = 0
NO_UPDATE = 0


# LibreOffice calls the progress indicator on a thread of pyuno's, not necessarily the one that
# sends the answer.
SENDING = threading.Lock()


def send(message):
    with SENDING:
        ANSWERS.write(json.dumps(message) + "\n")


class Progress(unohelper.Base, XStatusIndicator):
    """The StatusIndicator of a document's export, given where the request asks (convd reads only
    the PDF export's: office/progress.ts): each call LibreOffice makes on it is passed on to convd
    as an event. LibreOffice's PDF export starts it with the number of pages and sets it at each
    page. The words LibreOffice shows with it are not passed on."""

    def tell(self, event):
        try:
            send({"type": "event", "event": event})
        except Exception:
            # Never an error into LibreOffice's load or export for a progress note.
            pass

    def start(self, text, count):
        self.tell({"progress": "start", "range": count})

    def end(self):
        self.tell({"progress": "end"})

    def setText(self, text):
        pass

    def setValue(self, value):
        self.tell({"progress": "value", "value": value})

    def reset(self):
        pass



def prop(name, value):
    p = PropertyValue()
    p.Name = name
    p.Value = value
    return p


def props(values):
    return tuple(prop(name, value) for name, value in values.items())


class Failure(Exception):
    """A failure of the input or of the conversion: its code is one of convd's failure codes."""

    def __init__(self, code, message, cause=None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.cause = cause


# soffice.bin's exit status when it wants to be started again (after making a new profile); its
# launcher (oosplash) would do that, but convd starts soffice.bin itself (see start_office).
RESTART_REQUESTED = 81
# A start that dies of a signal before it accepts a connection is made once more: on a fresh
# machine (2026-12-06), one of two instances started at once aborted (SIGABRT) in LibreOffice's
# very first start there while the other came up; not seen again once the machine had started
# LibreOffice. A start that dies so twice, or exits with a status other than 81, is the
# instance's failure.
START_RETRIES_AFTER_SIGNAL = 1


def start_office(soffice, profile, setpriv):
    """Starts soffice and connects to it: its process and its Desktop (see launch_office)."""
    office, context = launch_office(soffice, profile, setpriv)
    return office, desktop_of(context)


def desktop_of(context):
    return context.ServiceManager.createInstanceWithContext("com.sun.star.frame.Desktop", context)


def type_detection_of(context):
    return context.ServiceManager.createInstanceWithContext("com.sun.star.document.TypeDetection", context)


def launch_office(soffice, profile, setpriv):
    """Starts soffice.bin and returns it with the component context it accepted a connection for.
    It starts soffice.bin, not the `soffice` script and its launcher: a process started by the
    launcher would lose the parent-death signal, so that a kill -9 of convd (which takes this
    bridge with it) could leave LibreOffice running. With setpriv it dies with this bridge."""
    write_profile(profile)
    # Named after the profile (src/engines/office/profiles.ts computes the same name), so that
    # convd can remove the pipe's file in /tmp when this instance is killed.
    pipe = "convd_" + hashlib.sha1(profile.encode()).hexdigest()[:16]
    command = [
        soffice, "--headless", "--invisible", "--nologo", "--norestore", "--nodefault", "--nolockcheck",
        "--nofirststartwizard", "-env:UserInstallation=" + uno.systemPathToFileUrl(profile),
        "--accept=pipe,name=%s;urp;StarOffice.ComponentContext" % pipe,
    ]
    if setpriv:
        command = [setpriv, "--pdeathsig", "KILL", "--"] + command
    env = office_env(profile)
    launch = lambda: subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, env=env)
    office = launch()
    local = uno.getComponentContext()
    resolver = local.ServiceManager.createInstanceWithContext("com.sun.star.bridge.UnoUrlResolver", local)
    deadline = time.monotonic() + START_TIMEOUT_S
    retries = START_RETRIES_AFTER_SIGNAL
    while True:
        # One look per turn: with two, an exit between them (81, a fresh profile's restart) was
        # taken for a failure.
        code = office.poll()
        if code == RESTART_REQUESTED:
            office = launch()
        elif code is not None and code < 0 and retries > 0:
            retries -= 1
            # Said where the instance's start is logged if it fails after all.
            print("soffice died of signal %d before it accepted a connection; starting it once more" % -code, file=sys.stderr, flush=True)
            office = launch()
        elif code is not None:
            again = " (its start made once more)" if retries < START_RETRIES_AFTER_SIGNAL else ""
            raise RuntimeError("soffice exited with %s before it accepted a connection%s" % (code, again))
        try:
            context = resolver.resolve("uno:pipe,name=%s;urp;StarOffice.ComponentContext" % pipe)
            break
        except NoConnectException:
            if time.monotonic() > deadline:
                raise RuntimeError("soffice did not accept a connection within %d s" % START_TIMEOUT_S)
            time.sleep(0.05)
    return office, context


def office_env(profile):
    """soffice's environment: this one, its temporary files in the profile. soffice keeps them in
    a directory of its own (lu<pid>....tmp) in TMPDIR and removes it when it ends, not when it is
    killed or crashes (a time limit, a stall, the memory limit, a document that aborts it): in the
    profile, they go with the profile, which convd removes however the instance ended."""
    # GSETTINGS_BACKEND: GLib's settings in memory, not dconf's file in the home, which the
    # confinement (confine.py) keeps soffice from writing.
    return dict(os.environ, TMPDIR=os.path.join(profile, "tmp"), GSETTINGS_BACKEND="memory")


def write_profile(profile):
    os.makedirs(os.path.join(profile, "user"), exist_ok=True)
    os.makedirs(os.path.join(profile, "tmp"), exist_ok=True)
    with open(os.path.join(profile, "user", "registrymodifications.xcu"), "w") as settings:
        settings.write(PROFILE_SETTINGS)


def stop_office(office, desktop):
    """Ends soffice cleanly (it removes its pipe files then), killing it after 10 s."""
    try:
        desktop.terminate()
    except Exception:
        pass
    try:
        office.wait(timeout=10)
    except subprocess.TimeoutExpired:
        office.kill()


def set_landscape(document):
    """Every page style in landscape (Writer and Calc; an Impress slide is what it is)."""
    families = document.StyleFamilies
    if not families.hasByName("PageStyles"):
        return False
    styles = families.getByName("PageStyles")
    for name in styles.ElementNames:
        style = styles.getByName(name)
        if not style.IsLandscape:
            width, height = style.Width, style.Height
            style.IsLandscape = True
            style.Width, style.Height = max(width, height), min(width, height)
    return True


def without_page_decoration(document, header):
    """No footer on any page style, nor a header where `header` is False. A CSV has no page
    layout of its own, and Calc's default footer ("Page 1") is LibreOffice's, not the user's; the
    header (the sheet's name, which is the file's) stays. A sheet's PDF read for its text (ods ->
    txt) keeps neither: each page would begin with the sheet's name and end with "Page 1"."""
    families = document.StyleFamilies
    if not families.hasByName("PageStyles"):
        return
    styles = families.getByName("PageStyles")
    for name in styles.ElementNames:
        style = styles.getByName(name)
        style.FooterIsOn = False
        if not header:
            style.HeaderIsOn = False


# com.sun.star.text.ControlCharacter.PARAGRAPH_BREAK.
PARAGRAPH_BREAK = 0


def with_frames_in_text(document):
    """Writer's text export writes the body's paragraphs and tables only: the words of a text
    frame or a shape (a Word text box, an OpenDocument frame: a business card's, a letterhead's
    address) were left out of a txt result. Each one's words are put in a paragraph after the one
    it is anchored in (in the document only as it is exported; the file is not written back); one
    anchored to the page or inside another frame goes at the end."""
    body = document.getText()
    found = []
    frames = document.getTextFrames()
    for name in frames.getElementNames():
        frame = frames.getByName(name)
        found.append((frame, words_of(frame.getText())))
    shapes = document.getDrawPage()
    for index in range(shapes.getCount()):
        shape = shapes.getByIndex(index)
        # A frame's shape is the frame above; a picture has no words.
        if shape.getShapeType() == "FrameShape" or not hasattr(shape, "getString"):
            continue
        try:
            found.append((shape, words_in_lines(shape.getString())))
        except Exception:
            continue
    for content, words in found:
        if not words:
            continue
        text, cursor = after_anchor(content, body)
        text.insertControlCharacter(cursor, PARAGRAPH_BREAK, False)
        text.insertString(cursor, words, False)


def words_of(text):
    """A frame's words: its paragraphs' and its tables' cells', one to a line, as the export
    writes the body's (a text's own string leaves its tables out)."""
    lines = []
    parts = text.createEnumeration()
    while parts.hasMoreElements():
        part = parts.nextElement()
        if part.supportsService("com.sun.star.text.TextTable"):
            lines.extend(part.getCellByName(cell).getString() for cell in part.getCellNames())
        else:
            lines.append(part.getString())
    return words_in_lines("\n".join(lines))


def words_in_lines(text):
    """The lines that hold words: a card's empty cells and tab-only lines are none."""
    return "\n".join(line for line in text.splitlines() if line.strip())


def after_anchor(content, body):
    """Where a frame's or shape's words go: the end of the paragraph it is anchored in, when that
    paragraph is exported (the body or a table's cell), else the end of the body."""
    try:
        anchor = content.getAnchor()
        text = anchor.getText()
        if not text.supportsService("com.sun.star.text.TextFrame"):
            cursor = text.createTextCursorByRange(anchor.getStart())
            cursor.gotoEndOfParagraph(False)
            return text, cursor
    except Exception:
        pass
    cursor = body.createTextCursor()
    cursor.gotoEnd(False)
    return body, cursor


# com.sun.star.text.FilenameDisplayFormat: FULL and PATH print the directory, NAME_AND_EXT not.
FILE_NAME_FULL, FILE_NAME_PATH, FILE_NAME_AND_EXT = 0, 1, 2
SEARCH_VALUES = 1  # a Calc search descriptor's SearchType: in results, not formulas


def without_server_paths(document, kind, path):
    """The document opens from a directory of the server's; what it prints of where it is (a
    FILENAME field, CELL("filename"), INFO("directory")) shows the user's file name instead."""
    directory = os.path.dirname(path) + "/"
    name = os.path.basename(path)
    url = uno.systemPathToFileUrl(path)
    directory_url = url[: url.rindex("/") + 1]

    def scrubbed(text):
        return text.replace(url, name).replace(directory_url, "").replace(path, name).replace(directory, "")

    if kind == "writer":
        fields = document.getTextFields().createEnumeration()
        changed = False
        while fields.hasMoreElements():
            field = fields.nextElement()
            if not field.supportsService("com.sun.star.text.TextField.FileName"):
                continue
            if field.FileFormat == FILE_NAME_FULL:
                field.FileFormat = FILE_NAME_AND_EXT
                changed = True
            elif field.FileFormat == FILE_NAME_PATH:
                field.IsFixed = True
                field.CurrentPresentation = ""
                changed = True
        # Refreshing recomputes every field of the document: 4-5 ms for a one-page docx, for
        # nothing when it has no FILENAME field.
        if changed:
            document.getTextFields().refresh()
    elif kind == "calc":
        # A search of the values, not a walk over every formula cell (a round trip each).
        sheets = document.getSheets()
        for index in range(sheets.getCount()):
            sheet = sheets.getByIndex(index)
            search = sheet.createSearchDescriptor()
            search.SearchString = directory
            search.SearchType = SEARCH_VALUES
            found = sheet.findAll(search)
            if found is None:
                continue
            cells = found.getCells().createEnumeration()
            while cells.hasMoreElements():
                cell = cells.nextElement()
                # The value in place of the formula: later formulas that read it see the name.
                cell.setString(scrubbed(cell.getString()))


def load(desktop, request, detection=None):
    url = uno.systemPathToFileUrl(request["input"])
    # No StatusIndicator: convd reads none of a load's calls (each a round trip to this process).
    # AsTemplate False: a template (ott, dotx, ots...) is opened as the file it is, not as a new
    # document made from it. Made from it, LibreOffice's business card template (sections linked
    # to its "MasterLabel") aborted soffice from a timer about half a second after it opened:
    # a conversion that took that long (its frames' words gathered for txt on a busy box) crashed.
    options = {"Hidden": True, "ReadOnly": True, "AsTemplate": False, "MacroExecutionMode": NEVER_EXECUTE, "UpdateDocMode": NO_UPDATE}
    if request.get("password"):
        options["Password"] = request["password"]
    if request.get("inputFilterOptions"):
        options["FilterOptions"] = request["inputFilterOptions"]
    try:
        return load_with(desktop, url, options, request.get("inputFilter"))
    except Exception as error:  # com.sun.star.io.IOException, lang.IllegalArgumentException
        refused = error
    # The '97 filter refuses a Word 6 .doc or a PowerPoint 95 .ppt, and Office 2003's XML or a text
    # called .doc or .xls: where LibreOffice's detection names an older version of the same format,
    # or what the file may be instead (formats.ts Disguise), that filter reads it; an HTML page so
    # called is refused, naming what it is. Anything else (damaged, protected, some other format)
    # fails as the '97 filter did.
    other = other_filter(detection, url, request)
    if other is None:
        raise unreadable(request, refused)
    name, filter_options = other
    try:
        return load_with(desktop, url, dict(options, FilterOptions=filter_options) if filter_options else options, name)
    except Exception:
        raise unreadable(request, refused)


def load_with(desktop, url, options, filter_name):
    """The document opened with this filter (LibreOffice's detection where None)."""
    document = desktop.loadComponentFromURL(url, "_blank", 0, props(dict(options, FilterName=filter_name) if filter_name else options))
    if document is None:
        # LibreOffice answers some files a filter cannot read with no document and no error.
        raise RuntimeError("")
    return document


def other_filter(detection, url, request):
    """(filter, its options or None) for the file where its claimed format's filter refused it: the
    filter LibreOffice's type detection finds, if it is an older version's (`olderFilters`); the one
    for the type it names among `disguises`; else, where the file's head is text, `asText`'s."""
    allowed = request.get("olderFilters") or []
    disguises = request.get("disguises") or {}
    as_text = request.get("asText")
    if detection is None or not (allowed or disguises or as_text):
        return None
    type_name, found = detected(detection, url)
    if found in allowed:
        return found, None
    disguise = disguises.get(type_name)
    if disguise is not None:
        if disguise.get("sendAs"):
            raise Failure("input_invalid", "The file is %s, not %s file: send it named .%s." % (disguise["what"], a_format(request["source"]), disguise["sendAs"]))
        return disguise["filter"], None
    options = text_options(request["input"], as_text["family"]) if as_text else None
    return (as_text["filter"], options) if options else None


def detected(detection, url):
    """(type, filter) LibreOffice's type detection names for the file; (None, None) where it names none."""
    try:
        type_name, descriptor = detection.queryTypeByDescriptor(props({"URL": url}), True)
    except Exception:
        return None, None
    return type_name, {p.Name: p.Value for p in descriptor}.get("FilterName")


# Bytes a text file does not hold: NUL and the control characters but tab, line feed, form feed
# and carriage return. LibreOffice's detection calls random bytes text as well.
NOT_TEXT = re.compile(rb"[\x00-\x08\x0b\x0e-\x1f\x7f]")
TEXT_HEAD_BYTES = 65536


def text_options(path, family):
    """The text import's options for a file whose head is text (UTF-8, else Windows-1252), or None.
    For a sheet, the first line's most frequent of tab, semicolon and comma separates the cells."""
    try:
        with open(path, "rb") as stream:
            head = stream.read(TEXT_HEAD_BYTES)
    except OSError:
        return None
    # Markup (an HTML page or an XML file the detection did not name) is not read as its source.
    if not head or NOT_TEXT.search(head) or head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"<"):
        return None
    try:
        head.decode("utf-8")
        utf8 = True
    except UnicodeDecodeError as error:
        # A character cut at the head's end is still UTF-8.
        utf8 = len(head) == TEXT_HEAD_BYTES and error.start >= len(head) - 3
    if family == "writer":
        return "UTF8" if utf8 else "MS_1252"
    line = head.split(b"\n", 1)[0]
    separator = max(b"\t;,", key=line.count)
    # LibreOffice's CSV options: separator, text delimiter ("), character set (76 UTF-8, 1
    # Windows-1252), the first line to read.
    return "%d,34,%d,1" % (separator if line.count(separator) else 9, 76 if utf8 else 1)


def unreadable(request, error):
    detail = str(getattr(error, "Message", "") or error or "").strip().splitlines()
    reason = detail[0] if detail else ""
    if request.get("password"):
        return Failure("input_invalid", "The document cannot be opened with the password given, or it is damaged%s." % (": " + reason if reason else ""), error)
    return Failure("input_invalid", "The document cannot be opened: it is damaged, not %s file, or protected by a password (send `password`)%s." % (a_format(request["source"]), ": " + reason if reason else ""), error)


def a_format(extension):
    """The format's name with its article, as the letters are read: "a doc", "an xls", "an ods"."""
    return ("an " if extension[:1] in "aefhilmnorsx" else "a ") + extension


def crash_for_tests(marker, request):
    """The tests' fault: soffice aborts (as 7.4 does on some real files) when the document's name
    holds `marker`; watch_office then ends this bridge."""
    global ABORTED_FOR_TESTS
    if marker and marker in os.path.basename(request["input"]):
        os.kill(OFFICE.pid, signal.SIGABRT)
        time.sleep(TEST_ABORT_WAIT_S)
        # Still here: soffice's crash handler hangs. watch_office ends the bridge once it is killed.
        ABORTED_FOR_TESTS = True
        OFFICE.kill()
        while True:
            time.sleep(1)


def opened(desktop, request, detection):
    """The document, loaded. PHASE stays "loading" if soffice dies here: the bridge then ends with
    CRASHED_ON_DOCUMENT (office_gone) before main() answers or resets it."""
    global PHASE
    PHASE = "loading"
    crash_for_tests(CRASH_ON_LOAD, request)
    document = load(desktop, request, detection)
    PHASE = "converting"
    return document


# The document services that tell a document's kind, in the order asked (a Writer document is
# only ever a TextDocument).
KINDS = (
    ("com.sun.star.text.TextDocument", "writer"),
    ("com.sun.star.sheet.SpreadsheetDocument", "calc"),
    ("com.sun.star.presentation.PresentationDocument", "impress"),
    ("com.sun.star.drawing.DrawingDocument", "draw"),
)


def kind_of(document):
    """The document's kind, or None: its services asked in one UNO call, not one per kind."""
    services = set(document.getSupportedServiceNames())
    return next((kind for service, kind in KINDS if service in services), None)


def convert(desktop, request, detection=None):
    document = opened(desktop, request, detection)
    try:
        if request.get("landscape"):
            set_landscape(document)
        kind = kind_of(document)
        if kind == "calc" and not request.get("printDecoration", True):
            without_page_decoration(document, header=False)
        elif request["source"] == "csv" and kind == "calc":
            without_page_decoration(document, header=True)
        if kind is None:
            raise Failure("input_invalid", "The document is of a kind that cannot be converted here.")
        if kind == "writer" and request["target"] == "txt":
            with_frames_in_text(document)
        # An encrypted package's parts are not readable to the scan: walked.
        if kind != "writer" or request.get("password") or field_scan.may_show_file_name(request["input"], request["source"]):
            without_server_paths(document, kind, request["input"])
        target_filter = request["filters"].get(kind)
        if target_filter is None:
            raise Failure("conversion_failed", "A %s document cannot be converted to %s." % (kind, request["target"]))
        store = {"FilterName": target_filter}
        if request.get("exportIndicator"):
            store["StatusIndicator"] = Progress()
        if request.get("filterOptions"):
            store["FilterOptions"] = request["filterOptions"]
        data = request.get("filterData")
        if data:
            store["FilterData"] = uno.Any("[]com.sun.star.beans.PropertyValue", props(data))
        if SLOW_BEFORE_STORE and SLOW_BEFORE_STORE in os.path.basename(request["input"]):
            time.sleep(SLOW_FOR_TESTS_S)
        crash_for_tests(CRASH_ON_STORE, request)
        try:
            document.storeToURL(uno.systemPathToFileUrl(request["output"]), props(store))
        except Exception as error:
            message = str(getattr(error, "Message", "") or error).strip().splitlines()
            raise Failure("conversion_failed", "LibreOffice could not write the %s file%s." % (request["target"], ": " + message[0] if message else ""), error)
        written = {"kind": kind, "warnings": font_warnings(request) if request.get("fontCheck", True) else []}
    except BaseException:
        # After a crash the close fails on the dead bridge; that must not hide the Failure.
        close(document)
        raise
    return written, document


def font_warnings(request):
    """What the result should say of the fonts it was set in; never a reason to fail a written file."""
    try:
        return font_names.substituted(request["input"], request["source"])
    except Exception:
        return []


def close(document):
    """Closes the document; the error if the bridge is gone with its soffice, else None."""
    try:
        document.close(True)
        return None
    except Exception as error:
        try:
            document.dispose()
        except Exception:
            pass
        return error if bridge_disposed(error) else None


def error_chain(error):
    """The error and those it was raised while handling (a Failure's cause among them)."""
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        yield error
        error = getattr(error, "cause", None) or error.__cause__ or error.__context__


def bridge_disposed(error):
    """Whether the error, or one it was raised while handling, says the UNO bridge is gone."""
    return any("disposed" in str(e).lower() or "Disposed" in type(e).__name__ for e in error_chain(error))


def uno_runtime_error(error):
    """Whether the error, or one it was raised while handling, is UNO's plain RuntimeException:
    what a call raises when the connection under it breaks without saying "disposed" ("illegal
    object given!" from a document proxy whose soffice was just killed). Not its subclasses
    (WrappedTargetRuntimeException is a filter's own failure)."""
    return any(type(e).__name__ == "com.sun.star.uno.RuntimeException" for e in error_chain(error))


def settle(office, document):
    """Closes the document a result was sent for, then tells convd this instance takes the next
    one ({"type": "settled"}; convd sends none before). If soffice died under the close, this
    bridge ends instead, and the next document goes to a new instance."""
    # Also where soffice died tearing the document down after close() returned: that is the
    # close's end, never the next document's crash.
    end_if_office_died(office, close(document), " while closing the document")
    send({"type": "settled"})


def end_if_office_died(office, error, during=" while converting"):
    """A call failed (`error`), or a close returned (`error` None where it went well). If soffice
    died under it (a crash, or killed), this instance is done: no answer is sent, convd sees the bridge end, fails the document and starts a new instance for
    the next one (an answer first would let the next document reach a dying instance)."""
    if office.poll() is None and not bridge_disposed(error):
        if not uno_runtime_error(error):
            return
        try:
            office.wait(timeout=GONE_WAIT_S)
        except subprocess.TimeoutExpired:
            return
    try:
        office.wait(timeout=2)
    except subprocess.TimeoutExpired:
        pass
    office_gone(office.returncode, during)


def watch_office(office):
    """Ends this bridge as soon as its soffice ends, whenever that is: an instance whose office
    died while idle (the kernel's OOM killer, say) must not be given the next document."""
    def wait():
        office_gone(office.wait(), "")
    threading.Thread(target=wait, daemon=True).start()


def crashed(code):
    return code is not None and code < 0 and -code in CRASH_SIGNALS


def office_gone(code, during):
    """Ends this bridge after its soffice ended with `code` (None: not reaped yet). Both threads
    come here (whichever sees the end first): a crash while a document was being opened is told
    by the exit status, as no answer can be sent."""
    if PHASE in ("loading", "converting") and (crashed(code) or ABORTED_FOR_TESTS):
        number = signal.SIGABRT if ABORTED_FOR_TESTS else -code
        sys.stderr.write("soffice crashed (signal %d) while %s the document\n" % (number, "opening" if PHASE == "loading" else "writing"))
        sys.stderr.flush()
        os._exit(CRASHED_ON_DOCUMENT)
    sys.stderr.write("soffice exited (%s)%s\n" % (code, during))
    sys.stderr.flush()
    os._exit(1)


def aborted_for_tests(office):
    """The tests' fault in the second way: soffice aborted as it starts; its exit status, SIGABRT's
    also where its crash handler hangs and it is killed (TEST_ABORT_WAIT_S)."""
    os.kill(office.pid, signal.SIGABRT)
    try:
        return office.wait(timeout=TEST_ABORT_WAIT_S)
    except subprocess.TimeoutExpired:
        office.kill()
        office.wait()
        return -signal.SIGABRT


def convert_once(soffice, profile, source, outdir, convert_to, infilter, flat, setpriv):
    """The second way: one document through `soffice.bin --convert-to` in a fresh profile with the
    instances' settings (no links, no macros, no recalculation), its output in `outdir` named
    after the input. soffice.bin rather than the `soffice` script for the parent-death signal, as
    launch_office; its messages go to stderr, where convd reads them. Exits 0 once soffice did
    (the output is convd's to check), CRASHED_ON_DOCUMENT if soffice crashed, else 1.

    Two runs: the document to its family's flat OpenDocument file (`flat`: extension and filter),
    where what would print the server's directory is taken out (mended_flat), then
    that file to the target. One run printed a FILENAME field as the document's place on the
    server (/tmp/convd-doc-<pid>-.../), which an instance's bridge replaces in the loaded document."""
    confined(soffice, profile, source, outdir)
    write_profile(profile)
    flat_extension, flat_filter = flat.split(":", 1)
    flat_dir = os.path.join(os.path.dirname(outdir.rstrip("/")), "flat")
    os.makedirs(flat_dir, exist_ok=True)
    code = soffice_once(soffice, profile, source, flat_dir, flat, infilter, setpriv)
    flat_path = os.path.join(flat_dir, os.path.splitext(os.path.basename(source))[0] + "." + flat_extension)
    if code == 0 and os.path.exists(flat_path):
        mended_flat(flat_path, source, convert_to)
        code = soffice_once(soffice, profile, flat_path, outdir, convert_to, flat_filter, setpriv)
    elif code == 0:
        sys.stderr.write("soffice wrote no %s file\n" % flat_extension)
        sys.exit(1)
    if crashed(code):
        sys.stderr.write("soffice crashed (signal %d)\n" % -code)
        sys.exit(CRASHED_ON_DOCUMENT)
    if code != 0:
        sys.stderr.write("soffice exited (%s)\n" % code)
    sys.exit(0 if code == 0 else 1)


def soffice_once(soffice, profile, source, outdir, convert_to, infilter, setpriv):
    """One `soffice.bin --convert-to` run; its exit status."""
    command = [
        soffice, "--headless", "--invisible", "--nologo", "--norestore", "--nodefault", "--nolockcheck",
        "--nofirststartwizard", "-env:UserInstallation=" + uno.systemPathToFileUrl(profile),
        "--infilter=" + infilter, "--convert-to", convert_to, "--outdir", outdir, source,
    ]
    if setpriv:
        command = [setpriv, "--pdeathsig", "KILL", "--"] + command
    env = office_env(profile)
    # A fresh profile: the first start makes it and asks to be started again.
    for _ in range(3):
        office = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=sys.stderr, env=env)
        code = aborted_for_tests(office) if CRASH_ONE_OFF and CRASH_ONE_OFF in os.path.basename(source) else office.wait()
        if code != RESTART_REQUESTED:
            return code
    return code


def mended_flat(flat_path, source, convert_to):
    """What the instance's bridge does in the loaded document, done in the flat file before the
    second run reads it (flat_file.py): the server's directory out, and for a text's txt its
    frames' words after their paragraphs."""
    with open(flat_path, encoding="utf-8") as stream:
        text = flat_file.without_directory(stream.read(), source)
    if convert_to.startswith("txt:") and flat_path.endswith(".fodt"):
        text = flat_file.with_frames_in_text(text)
    with open(flat_path, "w", encoding="utf-8") as stream:
        stream.write(text)


def warm_up(desktop, profile):
    """Has Writer read a Word file and write a PDF once before the first request: the first
    document an instance converts otherwise loads those filters itself (seconds on a busy box,
    where an instance started ahead for a waiting conversion was meant to be quick). Never a
    reason not to start: an instance that cannot do this still takes requests."""
    docx = os.path.join(profile, "warm-up.docx")
    pdf = os.path.join(profile, "warm-up.pdf")
    document = None
    try:
        document = desktop.loadComponentFromURL("private:factory/swriter", "_blank", 0, props({"Hidden": True}))
        document.getText().setString("warm-up")
        document.storeToURL(uno.systemPathToFileUrl(docx), props({"FilterName": "MS Word 2007 XML"}))
        close(document)
        document = desktop.loadComponentFromURL(uno.systemPathToFileUrl(docx), "_blank", 0, props({"Hidden": True, "ReadOnly": True}))
        document.storeToURL(uno.systemPathToFileUrl(pdf), props({"FilterName": "writer_pdf_Export"}))
    except Exception:
        pass
    finally:
        if document is not None:
            close(document)
        for path in (docx, pdf):
            try:
                os.remove(path)
            except OSError:
                pass


def confined(soffice, *writable):
    """This process and the soffice it starts kept to the system's files and the temporary
    directory (confine.py): what a document names elsewhere (an RTF's INCLUDEPICTURE of a file
    in the data directory) cannot be read. Said on stderr where the kernel cannot."""
    try:
        # CONVD_OFFICE_READABLE: more directories to read from (fonts kept elsewhere), colon-separated.
        readable = [path for path in os.environ.get("CONVD_OFFICE_READABLE", "").split(":") if path]
        if confine.confine(soffice, writable=[os.path.dirname(path.rstrip("/")) for path in writable], readable=readable) is None:
            print("not confined: the kernel has no Landlock", file=sys.stderr, flush=True)
    except OSError as error:
        print("not confined: %s" % error, file=sys.stderr, flush=True)


def main():
    global ANSWERS, OFFICE, PHASE
    ANSWERS = os.fdopen(3, "w", buffering=1)
    soffice, profile = sys.argv[1], sys.argv[2]
    setpriv = sys.argv[3] if len(sys.argv) > 3 else None
    confined(soffice, profile)
    office, context = launch_office(soffice, profile, setpriv)
    OFFICE = office
    desktop, detection = desktop_of(context), type_detection_of(context)
    watch_office(office)
    warm_up(desktop, profile)
    send({"type": "ready"})
    for line in sys.stdin:
        try:
            request = json.loads(line)
        except ValueError:
            send({"type": "result", "ok": False, "error": {"kind": "internal", "message": "the request is not JSON"}})
            continue
        written = None
        try:
            if request.get("op") == "ping":
                # A health check: the office answers a call over the bridge.
                desktop.getComponents()
                send({"type": "result", "ok": True, "value": {}})
            else:
                written, document = convert(desktop, request, detection)
        except Failure as failure:
            end_if_office_died(office, failure.cause)
            send({"type": "result", "ok": False, "error": {"kind": "conversion", "code": failure.code, "message": failure.message}})
        except Exception as error:
            end_if_office_died(office, error)
            send({"type": "result", "ok": False, "error": {"kind": "internal", "message": traceback.format_exc(limit=3)}})
        if written is not None:
            # The file is whole once storeToURL has returned: convd takes it while LibreOffice
            # closes the document (3-5 ms of a one-page letter's 40, more for a long one). A crash
            # from here on is the close's, not a crash on a document (office_gone).
            PHASE = "closing"
            send({"type": "result", "ok": True, "value": written, "settling": True})
            settle(office, document)
        PHASE = "idle"
    # stdin closed: convd wants this instance to end.
    stop_office(office, desktop)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--convert-to"]:
        convert_once(*sys.argv[2:9], sys.argv[9] if len(sys.argv) > 9 else None)
    else:
        main()
