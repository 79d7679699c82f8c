"""The durable jobs that talk to Discord: the delivery of an occurrence (send, forum post,
thread post), the update of a posted message, the publish to followers, the payload they
send, and around every request that posts one guard (:mod:`bot.posting.poster`: the lease
kept and checked, a timeout) and one classifier of what went wrong
(:mod:`bot.posting.failures`); reports go to the guild's log channel
(:mod:`bot.posting.log_channel`). What the jobs record is :mod:`bot.announcements.deliveries`."""
