//! Albums: Telegram delivers the photos (or files) of one media group as
//! separate messages sharing a `media_group_id`, usually in one `getUpdates`
//! batch but possibly split across two. They are held here for a short
//! window after the last part and leave as ONE inbound message carrying
//! every attachment, its text taken from whichever part has a caption.
//!
//! Only the album waits: other messages, even from the same chat, go out
//! at once (an album always ends up after a message sent before its first
//! part, and may come after one sent during its window — the user sent
//! them at the same moment). Durability is the receiver's business: the
//! poller does not confirm an update while its album is held (`polling.rs`),
//! and the webhook keeps a held part in its spool until its album has left
//! (`webhook.rs`).

use std::time::Duration;
use switchboard_platform::{ChatKind, InboundMessage};
use tokio::time::Instant;

/// How long an album waits for another part after its latest one.
pub const ALBUM_WINDOW: Duration = Duration::from_millis(500);

/// One album being assembled.
#[derive(Debug)]
struct Album {
    chat: i64,
    group: String,
    /// The parts so far, in arrival order.
    parts: Vec<InboundMessage>,
    /// The update ids of its parts: the poller must not confirm them.
    updates: Vec<i64>,
    /// When it leaves unless another part arrives.
    deadline: Instant,
}

/// Albums being assembled, oldest first.
#[derive(Debug)]
pub(crate) struct Albums {
    window: Duration,
    open: Vec<Album>,
}

impl Albums {
    pub fn new(window: Duration) -> Self {
        Self {
            window,
            open: Vec::new(),
        }
    }

    /// Holds `part` of album `group` (received in update `update_id`).
    pub fn add(&mut self, group: &str, update_id: i64, part: InboundMessage, now: Instant) {
        let chat = part.chat.chat.0;
        let deadline = now + self.window;
        match self
            .open
            .iter_mut()
            .find(|a| a.chat == chat && a.group == group)
        {
            Some(album) => {
                album.parts.push(part);
                album.updates.push(update_id);
                album.deadline = deadline;
            }
            None => self.open.push(Album {
                chat,
                group: group.to_owned(),
                parts: vec![part],
                updates: vec![update_id],
                deadline,
            }),
        }
    }

    /// When the next album is due, if any is held.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.open.iter().map(|a| a.deadline).min()
    }

    /// The smallest update id still held: updates from it on are not confirmed.
    pub fn oldest_update(&self) -> Option<i64> {
        self.open
            .iter()
            .flat_map(|a| a.updates.iter().copied())
            .min()
    }

    /// Whether update `id` is part of an album still held.
    pub fn holds(&self, id: i64) -> bool {
        self.open.iter().any(|a| a.updates.contains(&id))
    }

    /// Albums whose window has passed at `now`, merged, in the order their
    /// first parts arrived. An album that is not for the bot (captionless
    /// group media that replies to no bot message) is dropped, as a single
    /// such photo is.
    #[cfg(test)]
    pub fn take_due(&mut self, now: Instant) -> Vec<InboundMessage> {
        self.take_due_parts(now)
            .into_iter()
            .filter_map(|(_, album)| album)
            .collect()
    }

    /// [`Albums::take_due`] with the update ids of each album's parts (an
    /// album not for the bot comes as `None`: its parts are done with).
    pub fn take_due_parts(&mut self, now: Instant) -> Vec<(Vec<i64>, Option<InboundMessage>)> {
        let (due, open): (Vec<Album>, Vec<Album>) =
            self.open.drain(..).partition(|a| a.deadline <= now);
        self.open = open;
        due.into_iter()
            .map(|a| (a.updates, merge(a.parts)))
            .collect()
    }
}

/// One message for the whole album: the first part's id, chat and sender;
/// the captioned part's text; addressed if any part is; every attachment in
/// message order.
fn merge(mut parts: Vec<InboundMessage>) -> Option<InboundMessage> {
    parts.sort_by_key(|p| p.message_id.0);
    let lead = parts
        .iter()
        .position(|p| !p.text.is_empty())
        .or_else(|| parts.iter().position(|p| p.addressed.is_addressed()))
        .unwrap_or(0);
    let addressed = parts
        .iter()
        .map(|p| p.addressed)
        .find(|a| a.is_addressed())
        .unwrap_or(parts.get(lead)?.addressed);
    let attachments = parts
        .iter_mut()
        .flat_map(|p| std::mem::take(&mut p.attachments))
        .collect();
    let reply_to = parts.iter().find_map(|p| p.reply_to);
    let (text, chat_kind) = (parts[lead].text.clone(), parts[lead].chat_kind);
    let mut merged = parts.swap_remove(0);
    merged.text = text;
    merged.addressed = addressed;
    merged.reply_to = reply_to;
    merged.attachments = attachments;
    if merged.text.is_empty() && chat_kind != ChatKind::Dm && !addressed.is_addressed() {
        return None;
    }
    Some(merged)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Utc;
    use switchboard_platform::{
        Addressed, Attachment, AttachmentKind, ChatAddress, ChatId, MessageId, Platform, User,
        UserId,
    };

    fn part(chat: i64, id: i64, text: &str, addressed: Addressed) -> InboundMessage {
        let kind = if chat > 0 {
            ChatKind::Dm
        } else {
            ChatKind::Group
        };
        InboundMessage {
            chat: ChatAddress::new(Platform::Telegram, ChatId(chat), None),
            chat_kind: kind,
            user: User {
                is_approver: false,
                id: UserId(5),
                display_name: "Ann".into(),
                is_bot: false,
            },
            message_id: MessageId(id),
            text: text.into(),
            reply_to: None,
            addressed,
            attachments: vec![Attachment::new(AttachmentKind::Image, format!("f{id}"))],
            timestamp: Utc::now(),
            parent: None,
        }
    }

    fn handles(m: &InboundMessage) -> Vec<&str> {
        m.attachments.iter().map(|a| a.handle.0.as_str()).collect()
    }

    #[tokio::test(start_paused = true)]
    async fn parts_leave_together_after_the_window_following_the_last() {
        let mut albums = Albums::new(ALBUM_WINDOW);
        let t0 = Instant::now();
        albums.add("g", 10, part(7, 101, "", Addressed::Dm), t0);
        albums.add("g", 11, part(7, 102, "our trip", Addressed::Dm), t0);
        assert_eq!(albums.oldest_update(), Some(10));
        assert!(albums.holds(11) && !albums.holds(12));
        let later = t0 + Duration::from_millis(400);
        albums.add("g", 12, part(7, 103, "", Addressed::Dm), later);
        assert!(
            albums.take_due(t0 + ALBUM_WINDOW).is_empty(),
            "the third part renewed the window"
        );
        assert_eq!(albums.next_deadline(), Some(later + ALBUM_WINDOW));
        let out = albums.take_due(later + ALBUM_WINDOW);
        assert_eq!(out.len(), 1);
        assert_eq!(
            (out[0].message_id, out[0].text.as_str()),
            (MessageId(101), "our trip")
        );
        assert_eq!(handles(&out[0]), ["f101", "f102", "f103"]);
        assert!(albums.next_deadline().is_none() && albums.oldest_update().is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn albums_of_other_chats_and_groups_stay_apart() {
        let mut albums = Albums::new(ALBUM_WINDOW);
        let t0 = Instant::now();
        albums.add("g", 1, part(7, 1, "", Addressed::Dm), t0);
        albums.add("g", 2, part(8, 1, "", Addressed::Dm), t0);
        albums.add(
            "h",
            3,
            part(7, 2, "", Addressed::Dm),
            t0 + Duration::from_millis(100),
        );
        let first = albums.take_due(t0 + ALBUM_WINDOW);
        assert_eq!(first.len(), 2);
        assert_eq!(
            (first[0].chat.chat, first[1].chat.chat),
            (ChatId(7), ChatId(8))
        );
        assert_eq!(albums.oldest_update(), Some(3));
    }

    #[test]
    fn a_group_album_is_addressed_by_its_captioned_part_or_dropped() {
        let mention = merge(vec![
            part(-5, 1, "", Addressed::NotAddressed),
            part(-5, 2, "look at these", Addressed::Mention),
        ])
        .unwrap();
        assert_eq!(
            (mention.addressed, mention.text.as_str()),
            (Addressed::Mention, "look at these")
        );
        assert_eq!(mention.attachments.len(), 2);
        let chatter = merge(vec![
            part(-5, 3, "", Addressed::NotAddressed),
            part(-5, 4, "", Addressed::NotAddressed),
        ]);
        assert!(chatter.is_none(), "captionless group media not for the bot");
        let reply = merge(vec![
            part(-5, 5, "", Addressed::ReplyToBot),
            part(-5, 6, "", Addressed::NotAddressed),
        ])
        .unwrap();
        assert_eq!(reply.addressed, Addressed::ReplyToBot);
    }
}
