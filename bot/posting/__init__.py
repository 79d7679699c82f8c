"""The durable jobs that talk to Discord: the delivery of an occurrence (send, forum post,
thread post), the update of a posted message, the publish to followers, the payload they
send, and the lease and pacing guards around every request that posts."""
