//! Algorithm 1 of the paper (App. A; docs/model.md): fit → top-k membership → acquisition →
//! query → store → refit. [`live`] drives it against a judge (async, verdict ledger, budget,
//! progress) and sends every query through [`dispatch`], the one judge dispatcher that `gate`
//! and `audit` use too (intent before each request, replies and paid failures booked, budget
//! reservations); [`sim`] is the same loop without I/O, shared by `simulate` and the tests;
//! [`faults`] holds what the live loop does with failed queries (set-aside pairs, endpoint-wide
//! failures); [`queries`] is the one definition of a run's ordered pairs and of the next picks,
//! shared by the run, its dry run and the commands that re-read a run folder; [`schedule`] is
//! the pure scheduler (what to send, when to refit, when to stop; wait-for-batch or pipelined)
//! that [`live`] and [`sim_time`] (the same loop in virtual time, with a latency model) drive;
//! [`throughput`] measures the achieved request rate.

pub mod dispatch;
pub mod faults;
pub mod interrupt;
pub mod live;
pub mod pending;
pub mod queries;
pub mod schedule;
pub mod sim;
pub mod sim_time;
pub mod throughput;
