//! Unit tests of `safe_fs`.

use super::*;
use crate::scratch::Scratch;

fn mkfifo(path: &Path) {
    let c = CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

#[test]
fn only_regular_files_are_read_and_never_block() {
    let s = Scratch::new("safe-fs-read");
    let fifo = s.0.join("fifo");
    mkfifo(&fifo);
    for (path, kind) in [
        (fifo.as_path(), "FIFO (named pipe)"),
        (Path::new("/dev/zero"), "character device"),
        (s.0.as_path(), "directory"),
    ] {
        let e = read_regular_blocking(path, Links::Follow, 10, Oversize::Truncate).unwrap_err();
        assert!(
            matches!(e, FsError::WrongType { kind: k, .. } if k == kind),
            "{e}"
        );
        assert!(e.to_string().contains(&path.display().to_string()), "{e}");
    }
    std::fs::write(s.0.join("a"), "0123456789").unwrap();
    std::os::unix::fs::symlink("a", s.0.join("link")).unwrap();
    let link = read_regular_blocking(&s.0.join("link"), Links::Refuse, 100, Oversize::Refuse);
    assert!(
        matches!(
            link,
            Err(FsError::WrongType {
                kind: "symbolic link",
                ..
            })
        ),
        "{link:?}"
    );
    let ok =
        read_regular_blocking(&s.0.join("link"), Links::Follow, 100, Oversize::Refuse).unwrap();
    assert_eq!(ok.bytes, b"0123456789");
    let cut = read_regular_blocking(&s.0.join("a"), Links::Refuse, 4, Oversize::Truncate).unwrap();
    assert_eq!(
        (cut.bytes.as_slice(), cut.size, cut.truncated),
        (&b"0123"[..], 10, true)
    );
    let big = read_regular_blocking(&s.0.join("a"), Links::Refuse, 4, Oversize::Refuse);
    assert!(
        matches!(
            big,
            Err(FsError::TooLarge {
                size: 10,
                limit: 4,
                ..
            })
        ),
        "{big:?}"
    );
}

#[test]
fn walks_refuse_links_and_writes_are_private_and_exclusive() {
    use std::os::unix::fs::PermissionsExt;
    let s = Scratch::new("safe-fs-walk");
    std::fs::create_dir_all(s.0.join("outside")).unwrap();
    std::fs::create_dir_all(s.0.join("root/a")).unwrap();
    std::os::unix::fs::symlink(s.0.join("outside"), s.0.join("root/a/b")).unwrap();
    let root = Dir::open(&s.0.join("root")).unwrap();
    let e = root.walk(Path::new("a/b/c"), Some(0o700)).unwrap_err();
    assert!(
        matches!(
            e,
            FsError::WrongType {
                kind: "symbolic link",
                ..
            }
        ),
        "{e}"
    );
    assert!(!s.0.join("outside/c").exists());
    let e = root.walk(Path::new("a/../x"), Some(0o700)).unwrap_err();
    assert!(matches!(e, FsError::Outside { .. }), "{e}");

    let dir = root.walk(Path::new("p/q"), Some(0o700)).unwrap();
    let mode = |p: &Path| std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&s.0.join("root/p/q")), 0o700);
    let tmp = random_name(".t-");
    use std::io::Write;
    dir.create_new(OsStr::new(&tmp), 0o600)
        .unwrap()
        .write_all(b"x")
        .unwrap();
    assert!(dir.create_new(OsStr::new(&tmp), 0o600).is_err(), "O_EXCL");
    std::os::unix::fs::symlink(s.0.join("outside/victim"), s.0.join("root/p/q/ln")).unwrap();
    assert!(
        dir.create_new(OsStr::new("ln"), 0o600).is_err(),
        "O_NOFOLLOW"
    );
    assert!(!s.0.join("outside/victim").exists());
    dir.rename(
        OsStr::new(&tmp),
        &dir,
        OsStr::new("final"),
        Existing::Refuse,
    )
    .unwrap();
    assert_eq!(mode(&s.0.join("root/p/q/final")), 0o600);
    std::fs::write(s.0.join("root/p/q/other"), "y").unwrap();
    let clash = dir.rename(
        OsStr::new("other"),
        &dir,
        OsStr::new("final"),
        Existing::Refuse,
    );
    assert!(clash.is_err(), "no replace");
    assert_eq!(std::fs::read(s.0.join("root/p/q/final")).unwrap(), b"x");
    dir.remove_tree(OsStr::new("ln")).unwrap();
    root.remove_tree(OsStr::new("p")).unwrap();
    assert!(!s.0.join("root/p").exists());
    assert!(s.0.join("outside").is_dir());
}
