"""The clean-up of uid mode, run after every domain as the student's uid itself (it can only touch
what that uid owns): grader/sandbox/modes.py's ``reap()`` starts it as root,

    python -I -S grader/sandbox/reaper.py UID TOP...

and it drops to ``UID`` before anything else. A script of the standard library's lighter modules,
never importing the grader: it starts once per domain, and importing ``grader.sandbox.modes`` cost
70 ms of CPU each time, more than the reaper's own work (benchmarks/uid_cleanup.py). The grader reads
which processes a uid runs from here too (:func:`processes_of`).
"""

from __future__ import annotations

import ctypes
import os
import signal
import stat
import sys
import time

# A uid range no real account uses; each grading process gets its own (base + its pid: modes.student_uid).
UID_BASE = 0x7E000000
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


def _sweep(top: str, uid: int) -> int:
    """Remove what ``uid`` owns in ``top`` and in every folder below it that the uid may list: a
    world-writable folder inside a shared place (a 1777 /tmp/.X11-unix, a 0777 folder someone made
    in /tmp) takes the uid's files as /tmp does, and the next student of the same uid would find
    them. Entries are looked at only where the uid may write (it can have made nothing elsewhere);
    elsewhere only the folders are followed, never a symbolic link, and never into a folder of another
    student's uid (a concurrent job's): that student's clean-up removes it, and a tree as wide or deep as
    it cares to make would otherwise slow or stop this one. The count of what it could not remove."""
    kept, todo = 0, [top]
    while todo:
        folder = todo.pop()
        writable = os.access(folder, os.W_OK)
        for entry in _scandir(folder):
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
                if not (writable or is_dir):
                    continue
                owner = entry.stat(follow_symlinks=False).st_uid
            except OSError:  # gone meanwhile
                continue
            if owner == uid and writable:
                kept += _remove_owned(folder, entry.name, uid)
            elif is_dir and owner < UID_BASE:
                todo.append(entry.path)
    return kept


def _scandir(folder: str | int) -> list[os.DirEntry]:
    try:
        with os.scandir(folder) as entries:
            return list(entries)
    except OSError:
        return []


def _remove_owned(parent: str, name: str, uid: int) -> int:
    """Remove ``parent/name``, which ``uid`` owns: a file, or a folder with everything in it that the uid
    owns, after giving the owner the right to (a 0077 or 0555 folder of its own no longer stops it).
    The count of what the uid owns and could not remove.

    A folder is emptied from the bottom up, relative to one open folder at a time (``..`` leads back
    up): neither the depth of the tree the student made nor the length of its paths stops the clean-up
    (a recursion did, at a thousand folders, and the uid's next student was refused its grades too)."""
    try:
        os.unlink(os.path.join(parent, name))  # a file, a link: anything but a folder
        return 0
    except IsADirectoryError:
        pass
    except OSError:
        return 1
    try:
        here = os.open(parent, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return 1
    kept = 0
    left = [[name]]  # for each folder entered (and ``parent``): its subfolders still to remove
    entered: list[str] = []  # the names of the folders entered, from ``name`` down to ``here``
    try:
        while left:
            if left[-1]:
                child = left[-1].pop()
                try:
                    os.chmod(child, 0o700, dir_fd=here)  # a folder of the uid's (no process of it runs now)
                    below = os.open(child, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=here)
                except OSError:
                    kept += 1
                    continue
                os.close(here)
                here = below
                entered.append(child)
                folders, not_removed = _empty_but_folders(here, uid)
                left.append(folders)
                kept += not_removed
                continue
            left.pop()
            if not entered:
                break
            done = entered.pop()
            up = os.open("..", os.O_RDONLY | os.O_DIRECTORY, dir_fd=here)
            os.close(here)
            here = up
            try:
                os.rmdir(done, dir_fd=here)
            except OSError:
                kept += 1
    finally:
        os.close(here)
    return kept


def _empty_but_folders(folder: int, uid: int) -> tuple[list[str], int]:
    """Remove what ``uid`` owns in the open ``folder`` but its folders; (those folders' names, the count of
    what could not be removed). What another user owns stays (the folder's removal then fails, and counts)."""
    folders, kept = [], 0
    for entry in _scandir(folder):
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if st.st_uid != uid:
            continue
        if stat.S_ISDIR(st.st_mode):
            folders.append(entry.name)
            continue
        try:
            os.unlink(entry.name, dir_fd=folder)
        except OSError:
            kept += 1
    return folders, kept


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
