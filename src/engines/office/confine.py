"""Confines the office bridge and the LibreOffice it starts to the files they need, with Linux's
Landlock (src/engines/office/bridge.py calls `confine` first thing; docs/formats.md, LibreOffice).

LibreOffice's own settings do not stop every way a document reads a file of the machine: an RTF
field `INCLUDEPICTURE "file:///..."` is read and its image embedded in the result whatever the
profile says of linked images (tested with LibreOffice 7.4). Landlock lets an unprivileged
process take away its own access to every file outside a few directories, for itself and every
process it starts: here, reading the system (programs, libraries, fonts, configuration) and
reading and writing the temporary directory, where the instance's profile and the document's
own directory are. The daemon's data directory (every account's inputs and results) and the
home directories are out of reach, whatever a document names.

Where the kernel has no Landlock (before Linux 5.13, or not among its security modules) nothing
is confined and `confine` says so; the bridge goes on as before.
"""

import ctypes
import os
import sys
import tempfile

# Syscall numbers: the same on every architecture (Linux's common syscall table).
CREATE_RULESET, ADD_RULE, RESTRICT_SELF = 444, 445, 446
CREATE_RULESET_VERSION = 1 << 0
RULE_PATH_BENEATH = 1
PR_SET_NO_NEW_PRIVS = 38

EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
# Landlock's first version's rights for changing the tree, and REFER (version 2): moving or
# linking a file into another directory, which a ruleset that does not handle it always denies.
CHANGE = sum(1 << bit for bit in range(4, 13))
REFER = 1 << 13

READ = EXECUTE | READ_FILE | READ_DIR

# Where the system is: programs, libraries, LibreOffice, Python, fonts and their caches,
# configuration, and the kernel's views of processes and devices. Debian's LibreOffice keeps its
# bundled extensions' registration in /var/lib and /var/spool (symbolic links from its share/):
# without them soffice aborts at its start (a DeploymentException).
SYSTEM = (
    "/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin", "/etc", "/proc", "/sys",
    "/var/cache/fontconfig", "/var/lib/libreoffice", "/var/spool/libreoffice",
)
# Fonts a user installed for the daemon's account, and fontconfig's cache of them.
HOME_FONTS = (".fonts", ".local/share/fonts", ".cache/fontconfig", ".fontconfig")


class PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def readable_roots(soffice, extra=()):
    """The directories read from: the system's, LibreOffice's and Python's installations wherever
    they are, this script's directory (its modules, the fontconfig file), fonts of the home; only
    `extra` (the operator's) may be the root directory."""
    roots = list(SYSTEM)
    install = os.path.dirname(os.path.dirname(os.path.realpath(soffice)))
    roots += [install, sys.prefix, sys.base_prefix, os.path.dirname(os.path.abspath(__file__))]
    home = os.environ.get("HOME")
    if home:
        roots += [os.path.join(home, name) for name in HOME_FONTS]
    fonts = os.environ.get("FONTCONFIG_FILE")
    if fonts:
        roots.append(os.path.dirname(os.path.abspath(fonts)))
    return below_root(roots) + list(extra)


def writable_roots(extra=()):
    """The directories written to: the temporary directory (the profile, the document's
    directory, soffice's pipe in /tmp) and devices (/dev/null, shared memory)."""
    return below_root(["/tmp", tempfile.gettempdir(), "/dev"] + list(extra))


def below_root(paths):
    """The paths but the root directory: a derived one that is / (LibreOffice's soffice.bin in
    /bin, a FONTCONFIG_FILE at /fonts.conf, a temporary directory of /) would open everything."""
    return [path for path in paths if os.path.realpath(path) != "/"]


def confine(soffice, writable=(), readable=()):
    """Confines this process and what it starts; returns the Landlock version used, or None
    where the kernel has none (nothing is confined then)."""
    libc = ctypes.CDLL(None, use_errno=True)
    syscall = libc.syscall
    syscall.restype = ctypes.c_long
    version = syscall(CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(CREATE_RULESET_VERSION))
    if version < 1:
        return None
    handled = READ | WRITE_FILE | CHANGE | (REFER if version >= 2 else 0)
    attr = ctypes.c_uint64(handled)
    ruleset = syscall(CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)), ctypes.c_uint32(0))
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset: " + os.strerror(ctypes.get_errno()))
    try:
        for path in readable_roots(soffice, readable):
            allow(syscall, ruleset, path, READ)
        for path in writable_roots(writable):
            allow(syscall, ruleset, path, handled)
        if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS): " + os.strerror(ctypes.get_errno()))
        if syscall(RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)) != 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self: " + os.strerror(ctypes.get_errno()))
    finally:
        os.close(ruleset)
    return version


def allow(syscall, ruleset, path, access):
    """Allows `access` beneath the directory `path` (nothing where it is not a directory)."""
    try:
        fd = os.open(path, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return
    try:
        rule = PathBeneath(access, fd)
        if syscall(ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(RULE_PATH_BENEATH), ctypes.byref(rule), ctypes.c_uint32(0)) != 0:
            raise OSError(ctypes.get_errno(), "landlock_add_rule %s: %s" % (path, os.strerror(ctypes.get_errno())))
    finally:
        os.close(fd)
