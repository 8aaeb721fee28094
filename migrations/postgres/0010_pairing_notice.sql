-- Where an unknown user asked for a pairing code (their DM chat), and when the
-- gateway told them they were approved: an approval made with
-- `switchboard pair approve` in another process is announced by the gateway.
ALTER TABLE pairing_codes ADD COLUMN chat_id BIGINT;
ALTER TABLE pairing_codes ADD COLUMN notified_at BIGINT;
-- Requests decided before this migration are not announced now.
UPDATE pairing_codes SET notified_at = created_at WHERE status <> 'pending';
