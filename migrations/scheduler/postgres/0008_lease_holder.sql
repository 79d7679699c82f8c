-- The process whose run holds a job's lease (the scheduler's process id), set by the claim
-- and kept after the run: when the sweep reclaims an expired lease, the run history's
-- lease_lost row names the process that held it. NULL: claimed before this column existed
-- (or by a caller that named no process).
ALTER TABLE scheduler_jobs ADD COLUMN lease_holder TEXT;
