//! Each user's own workspace folder, through the real core: one user's
//! uploads are not another's to read, send or reach with a command (in a
//! group they share too; background runs and scheduled turns act in the
//! folder of the user they run for), while the operator at the console sees
//! them all;
//! a link planted where the inbox goes is not followed by the next upload;
//! the folder's quota refuses uploads, writes and commands that would fill
//! it; and a file name's bidi characters are shown neutralized in the chat.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use serde_json::{json, Value};
use support::e2e::{tool_result, Harness};
use support::fake_llm::Reply;
use support::test_channel::{Download, Op, TestChannel};
use switchboard_platform::{Addressed, AttachmentKind};

/// The group users 42 and 43 share (its inbox folder is `console-n100`).
const GROUP: i64 = -100;
const PAYSLIP: &[u8] = b"name,net\nuser43,salary 5000 EUR\n";

/// The result of tool call `id`, from the latest request that carries it.
async fn result_of(h: &Harness, n: usize, id: &str) -> String {
    let requests = h.requests(n).await;
    let with = |r: &&Value| {
        r["messages"]
            .as_array()
            .is_some_and(|m| m.iter().any(|m| m["tool_call_id"] == id))
    };
    let request = requests.iter().rev().find(with);
    tool_result(request.unwrap_or_else(|| panic!("no result for {id}")), id)
}

/// User 43 sends their payslip in the group; returns where it lands: in
/// 43's own folder (checked by [`landed`] once the test has attacked it).
async fn payslip_of_43(h: &Harness) -> std::path::PathBuf {
    h.llm.push(Reply::text("Filed."));
    let doc = h.channel.file(
        AttachmentKind::Document,
        Some("payslip.txt"),
        Download::Bytes(PAYSLIP.to_vec()),
    );
    h.channel
        .group_with(43, GROUP, "keep my payslip", vec![doc])
        .await;
    h.wait_for("43's answer", |l| l.has_text("Filed.")).await;
    h.folder(43).join("inbox/console-n100/payslip.txt")
}

fn landed(theirs: &std::path::Path) {
    assert_eq!(
        std::fs::read(theirs).unwrap(),
        PAYSLIP,
        "in 43's own folder"
    );
}

#[tokio::test]
async fn a_users_uploads_are_not_another_users_to_read_or_send() {
    let h = Harness::start().await;
    let theirs = payslip_of_43(&h).await;
    let abs = theirs.display().to_string();
    // 42, in the same group: the path 43's model was told, the way up to
    // 43's folder, the absolute path; reading and sending.
    h.llm.push(Reply::tool_calls([
        (
            "r_told",
            "read_file",
            json!({"path": "inbox/console-n100/payslip.txt"}),
        ),
        (
            "r_up",
            "read_file",
            json!({"path": "../console-43/inbox/console-n100/payslip.txt"}),
        ),
        ("r_abs", "read_file", json!({"path": abs})),
        ("s_abs", "send_file", json!({"path": abs})),
        (
            "s_told",
            "send_file",
            json!({"path": "inbox/console-n100/payslip.txt"}),
        ),
    ]));
    h.llm.push(Reply::text("That is not yours."));
    h.channel
        .group(42, GROUP, Addressed::Mention, "send me the payslip")
        .await;
    h.wait_for("42's answer", |l| l.has_text("That is not yours."))
        .await;
    for id in ["r_told", "r_up", "r_abs", "s_abs", "s_told"] {
        let result = result_of(&h, 3, id).await;
        assert!(result.starts_with("error:"), "{id}: {result}");
        assert!(!result.contains("5000"), "{id} leaked: {result}");
    }
    // Told why: another user's folder is not theirs to read.
    for id in ["r_up", "r_abs", "s_abs"] {
        let result = result_of(&h, 3, id).await;
        assert!(result.contains("other users' files"), "{id}: {result}");
    }
    assert!(result_of(&h, 3, "r_told").await.contains("does not exist"));
    assert!(h.channel.files_sent().is_empty(), "nothing was sent");
    landed(&theirs);
    h.stop().await;
}

#[tokio::test]
async fn a_command_run_for_one_user_cannot_reach_another_users_folder() {
    let h = Harness::start().await;
    let theirs = payslip_of_43(&h).await;
    let root = h.root();
    let command = format!(
        "cat inbox/console-n100/payslip.txt ../console-43/inbox/console-n100/payslip.txt \
         {} {}/inbox/console-n100/payslip.txt 2>&1; ls {}/users 2>&1; pwd > where.txt; true",
        theirs.display(),
        root.display(),
        root.display()
    );
    let mut cards = Vec::new();
    for (id, background) in [("x_fg", false), ("x_bg", true)] {
        h.llm.push(Reply::tool_calls([(
            id,
            "exec_command",
            json!({"command": command, "background": background}),
        )]));
        h.llm.push(Reply::text(&format!("Ran {id}.")));
        if background {
            // The background run's result comes back as a notification turn.
            h.llm.push(Reply::text(&format!("Finished {id}.")));
        }
        h.channel
            .group(42, GROUP, Addressed::Mention, "look around")
            .await;
        let card = match cards.last() {
            None => h.channel.card().await,
            Some(previous) => h.channel.next_card(*previous).await,
        };
        cards.push(card.id);
        h.channel.press(42, &card.action('y')).await;
        h.wait_for("the answer", |l| l.has_text(&format!("Ran {id}.")))
            .await;
        h.idle().await;
        if !background {
            let result = result_of(&h, 3, "x_fg").await;
            assert!(result.starts_with("exit code: 0"), "{result}");
            assert!(
                !result.contains("5000"),
                "the command read 43's file: {result}"
            );
            assert!(
                !result.contains("\nconsole-43"),
                "the command listed 43's folder: {result}"
            );
            assert!(
                card.text
                    .contains(&format!("cwd: {}", h.folder(42).display())),
                "the card says where it runs: {}",
                card.text
            );
        }
        // Foreground or background, it ran in 42's folder.
        let at = h.folder(42).join("where.txt");
        let where_ = std::fs::read_to_string(&at).unwrap();
        assert_eq!(where_.trim(), h.folder(42).display().to_string(), "{id}");
        std::fs::remove_file(at).unwrap();
    }
    landed(&theirs);
    h.stop().await;
}

#[tokio::test]
async fn the_operator_at_the_console_reads_every_users_folder() {
    let h = Harness::with_channel(&[], TestChannel::local_operator()).await;
    let theirs = h
        .root()
        .join("users/telegram-43/inbox/telegram-43/payslip.txt");
    std::fs::create_dir_all(theirs.parent().unwrap()).unwrap();
    std::fs::write(&theirs, PAYSLIP).unwrap();
    h.llm.push(Reply::tool_calls([(
        "r_op",
        "read_file",
        json!({"path": "users/telegram-43/inbox/telegram-43/payslip.txt"}),
    )]));
    h.llm.push(Reply::text("Read it."));
    h.channel.dm(1, "what does 43's payslip say?").await;
    h.wait_for("the answer", |l| l.has_text("Read it.")).await;
    let result = result_of(&h, 2, "r_op").await;
    assert!(result.contains("salary 5000 EUR"), "{result}");
    h.stop().await;
}

#[tokio::test]
async fn a_link_planted_where_the_inbox_goes_is_not_followed_by_the_next_upload() {
    let h = Harness::start().await;
    let elsewhere = tempfile::tempdir().unwrap();
    // An approved command plants the link where the chat's inbox folder goes.
    h.llm.push(Reply::tool_calls([(
        "plant",
        "exec_command",
        json!({"command": format!(
            "mkdir -p inbox && ln -s {} inbox/console-1 && echo planted",
            elsewhere.path().display()
        )}),
    )]));
    h.llm.push(Reply::text("Planted."));
    h.channel.dm(1, "tidy the inbox").await;
    let card = h.channel.card().await;
    h.channel.press(1, &card.action('y')).await;
    h.wait_for("the first answer", |l| l.has_text("Planted."))
        .await;
    assert!(result_of(&h, 2, "plant").await.contains("planted"));

    h.llm.push(Reply::text("Noted."));
    let doc = h.channel.file(
        AttachmentKind::Document,
        Some("notes.csv"),
        Download::Bytes(b"a,b\n1,2\n".to_vec()),
    );
    h.channel.dm_with(1, "here are my notes", vec![doc]).await;
    let log = h.wait_for("the answer", |l| l.has_text("Noted.")).await;
    assert_eq!(
        std::fs::read_dir(elsewhere.path()).unwrap().count(),
        0,
        "nothing was written through the link"
    );
    assert!(
        log.any_contains("`inbox/console-1` in your workspace folder is a symbolic link"),
        "the user is told why: {log}"
    );
    h.stop().await;
}

#[tokio::test]
async fn the_folder_quota_refuses_uploads_writes_and_commands_that_fill_it() {
    let h = Harness::with(&[("WORKSPACE_QUOTA_MB", "1")]).await;
    h.write("filler.txt", &"x".repeat(1000 << 10));
    // An upload that would take the folder over 1 MB.
    h.llm.push(Reply::text("Noted."));
    let doc = h.channel.file(
        AttachmentKind::Document,
        Some("big.bin"),
        Download::Bytes(vec![0xAB; 30 << 10]),
    );
    h.channel.dm_with(1, "store this", vec![doc]).await;
    let log = h.wait_for("the answer", |l| l.has_text("Noted.")).await;
    assert!(
        log.any_contains("I did not save “big.bin”: your workspace folder would grow to")
            && log.any_contains("over its quota of 1 MB"),
        "{log}"
    );
    assert!(!h.workspace().join("inbox/console-1/big.bin").exists());

    // A write that would, after its card.
    h.llm.push(Reply::tool_calls([(
        "w_big",
        "write_file",
        json!({"path": "more.txt", "content": "y".repeat(30 << 10)}),
    )]));
    h.llm.push(Reply::text("Tried."));
    h.channel.dm(1, "write more").await;
    let card = h.channel.card().await;
    h.channel.press(1, &card.action('y')).await;
    h.wait_for("the answer", |l| l.has_text("Tried.")).await;
    let result = result_of(&h, 3, "w_big").await;
    assert!(
        result.contains("would take your workspace folder to") && result.contains("quota"),
        "{result}"
    );
    assert!(!h.workspace().join("more.txt").exists());

    // A command that fills it is stopped.
    h.llm.push(Reply::tool_calls([(
        "x_fill",
        "exec_command",
        json!({"command": "head -c 100000 /dev/zero > fill.bin; sleep 30; echo finished"}),
    )]));
    h.llm.push(Reply::text("Stopped."));
    h.channel.dm(1, "fill it").await;
    let card = h.channel.next_card(card.id).await;
    h.channel.press(1, &card.action('y')).await;
    h.wait_for("the answer", |l| l.has_text("Stopped.")).await;
    let result = result_of(&h, 5, "x_fill").await;
    assert!(
        result.contains("was stopped: your workspace folder grew to"),
        "{result}"
    );
    assert!(!result.contains("finished"), "{result}");
    h.stop().await;
}

#[tokio::test]
async fn file_names_with_bidi_controls_are_shown_neutralized_in_the_chat() {
    let h = Harness::start().await;
    // Refused (not an image): the name is said back in the chat.
    h.llm.push(Reply::text("Saw it."));
    let fake = h.channel.file(
        AttachmentKind::Image,
        Some("payslip\u{202E}fdp.exe"),
        Download::Bytes(b"MZ not an image".to_vec()),
    );
    // Saved: the name it is saved under has no bidi control left.
    let notes = h.channel.file(
        AttachmentKind::Document,
        Some("notes\u{202E}vsc.txt"),
        Download::Bytes(b"plain notes\n".to_vec()),
    );
    h.channel.dm_with(1, "two files", vec![fake, notes]).await;
    h.wait_for("the answer", |l| l.has_text("Saw it.")).await;

    // A workspace file whose name carries one, sent back.
    h.write("report\u{202E}fdp.exe", "quarterly numbers");
    h.llm.push(Reply::tool_calls([(
        "s_rlo",
        "send_file",
        json!({"path": "report\u{202E}fdp.exe"}),
    )]));
    h.llm.push(Reply::text("Sent."));
    h.channel.dm(1, "send the report").await;
    let log = h.wait_for("the answer", |l| l.has_text("Sent.")).await;

    assert!(
        log.any_contains("“payslip⟨U+202E⟩fdp.exe” is not an image"),
        "{log}"
    );
    let files = h.channel.files_sent();
    let Some(Op::File { name, bytes, .. }) = files.first() else {
        panic!("no file sent: {log}");
    };
    assert_eq!(
        (name.as_str(), bytes.as_slice()),
        ("report⟨U+202E⟩fdp.exe", b"quarterly numbers".as_slice())
    );
    for text in log.texts() {
        assert!(!text.contains('\u{202E}'), "raw in the chat: {text:?}");
    }
    assert!(h.workspace().join("inbox/console-1/notesvsc.txt").exists());
    h.stop().await;
}

#[tokio::test]
async fn a_scheduled_turn_acts_in_the_folder_of_the_user_who_scheduled_it() {
    let h = Harness::start().await;
    h.write_for(43, "notes.txt", "43's own notes");
    h.write_for(42, "notes.txt", "42's private notes");
    let at = (chrono::Utc::now() + chrono::Duration::milliseconds(1_500)).to_rfc3339();
    h.llm.push(Reply::tool_calls([(
        "call_s",
        "schedule",
        json!({"kind": "at", "spec": at, "prompt": "read my notes"}),
    )]));
    h.llm.push(Reply::text("Scheduled."));
    // The scheduled turn reads its user's notes, then tries 42's.
    h.llm.set_responder(|request| {
        let read = request["messages"]
            .as_array()
            .is_some_and(|m| m.iter().any(|m| m["tool_call_id"] == "r_mine"));
        if read {
            Reply::text("Read on schedule.")
        } else {
            Reply::tool_calls([
                ("r_mine", "read_file", json!({"path": "notes.txt"})),
                (
                    "r_theirs",
                    "read_file",
                    json!({"path": "../console-42/notes.txt"}),
                ),
            ])
        }
    });
    h.channel.dm(43, "read my notes in a moment").await;
    h.wait_for("the scheduled answer", |l| l.has_text("Read on schedule."))
        .await;
    let mine = result_of(&h, 4, "r_mine").await;
    assert!(mine.contains("43's own notes"), "{mine}");
    let theirs = result_of(&h, 4, "r_theirs").await;
    assert!(
        theirs.contains("other users' files") && !theirs.contains("private"),
        "{theirs}"
    );
    h.stop().await;
}
