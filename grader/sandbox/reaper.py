"""The clean-up of uid mode, run after every domain as the student's uid itself (it can only touch
what that uid owns): grader/sandbox/modes.py's ``reap()`` starts it as root,

    python -I -S grader/sandbox/reaper.py UID TOP...

and it drops to ``UID`` before anything else. A script of the standard library's lighter modules,
never importing the grader: it starts once per domain, and importing ``grader.sandbox.modes`` cost
70 ms of CPU each time, five times the reaper's own work. The grader reads which processes a uid
runs from here too (:func:`processes_of`).
"""

from __future__ import annotations

import ctypes
import os
import signal
import stat
import sys
import time

# SysV IPC tables: (file under /proc/sysvipc, the column of the id, the columns of the owner and creator).
_SYSV_TABLES = (("shm", 1, (7, 9)), ("msg", 1, (7, 9)), ("sem", 1, (4, 6)))


def processes_of(uid: int) -> dict[int, str]:
    """{pid: state letter} of the processes whose real, effective or saved uid is ``uid`` (zombies: "Z")."""
    found, wanted = {}, str(uid)
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/status") as f:
                status = f.read()
        except OSError:
            continue
        uids = status.partition("\nUid:")[2].partition("\n")[0].split()[:3]
        if wanted in uids:
            found[int(name)] = status.partition("\nState:")[2].strip()[:1]
    return found


def running_as(uid: int) -> list[int]:
    """Pids of the live (not zombie) processes whose real, effective or saved uid is ``uid``."""
    return [pid for pid, state in processes_of(uid).items() if state != "Z"]


def reap_as_uid(uid: int, tops: list[str]) -> None:
    """Run as ``uid``: ``kill(-1)`` reaches every process of that uid and no other; then remove what it
    owns under ``tops`` and in the SysV IPC tables. Prints how many of its processes, and of its
    files and IPC objects, are left. Never raises on what the student made: whatever cannot be
    removed is counted."""
    deadline = time.monotonic() + 5
    while True:
        try:
            os.kill(-1, signal.SIGKILL)
        except OSError:
            pass
        left = [pid for pid in running_as(uid) if pid != os.getpid()]
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.01)
    kept = sum(_sweep(top, uid) for top in tops)
    kept += _remove_sysv_ipc(uid)
    print(len(left), kept)


def _sweep(folder: str, uid: int) -> int:
    """Remove what ``uid`` owns in ``folder`` and in every folder below it that the uid may list: a
    world-writable folder inside a shared place (a 1777 /tmp/.X11-unix, a 0777 folder someone made
    in /tmp) takes the uid's files as /tmp does, and the next student of the same uid would find
    them. Entries are looked at only where the uid may write (it can have made nothing elsewhere);
    elsewhere only the folders are followed, never a symbolic link. The count of what it could not
    remove."""
    writable = os.access(folder, os.W_OK)
    kept = 0
    for entry in _scandir(folder):
        try:
            if writable and entry.stat(follow_symlinks=False).st_uid == uid:
                kept += _remove_owned(entry.path, uid)
            elif entry.is_dir(follow_symlinks=False):
                kept += _sweep(entry.path, uid)
        except OSError:  # gone meanwhile
            continue
    return kept


def _scandir(folder: str) -> list[os.DirEntry]:
    try:
        with os.scandir(folder) as entries:
            return list(entries)
    except OSError:
        return []


def _entries(folder: str) -> list[str]:
    try:
        return os.listdir(folder)
    except OSError:
        return []


def _remove_owned(path: str, uid: int) -> int:
    """Remove ``path`` if ``uid`` owns it (a folder with everything in it that the uid owns, after giving
    the owner the right to: a 0077 or 0555 folder of its own no longer stops it); the count of what
    the uid owns and could not remove."""
    try:
        st = os.lstat(path)
    except OSError:
        return 0
    if st.st_uid != uid:
        return 0
    if stat.S_ISDIR(st.st_mode):
        try:
            os.chmod(path, 0o700)
        except OSError:
            pass
        kept = sum(_remove_owned(os.path.join(path, entry), uid) for entry in _entries(path))
        try:
            os.rmdir(path)
        except OSError:
            return kept + 1
        return kept
    try:
        os.unlink(path)
    except OSError:
        return 1
    return 0


def _remove_sysv_ipc(uid: int) -> int:
    """Remove the SysV shared memory segments, message queues and semaphore sets that ``uid`` owns or
    created (the owner may, whatever their modes); the count of those left."""
    libc = ctypes.CDLL(None, use_errno=True)
    ipc_rmid = 0
    removers = {"shm": lambda i: libc.shmctl(i, ipc_rmid, None), "msg": lambda i: libc.msgctl(i, ipc_rmid, None),
                "sem": lambda i: libc.semctl(i, 0, ipc_rmid)}
    kept = 0
    for table, id_column, owner_columns in _SYSV_TABLES:
        try:
            with open(f"/proc/sysvipc/{table}") as f:
                rows = [line.split() for line in f.readlines()[1:]]
        except OSError:
            continue
        for row in rows:
            try:
                mine = any(int(row[c]) == uid for c in owner_columns)
                if mine and removers[table](int(row[id_column])) != 0:
                    kept += 1
            except (IndexError, ValueError):
                continue
    return kept


def main(argv: list[str]) -> None:
    uid = int(argv[0])
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    reap_as_uid(uid, argv[1:])


if __name__ == "__main__":
    main(sys.argv[1:])
