//! The statistical core: bias-aware Bradley–Terry MAP, Laplace posterior, top-k membership.
//! Pure and synchronous; no I/O, no clock, RNG passed in (see docs/model.md).

pub mod bt;
pub mod laplace;
pub mod linalg;
pub mod membership;
pub mod panel;
pub mod params;
pub mod profile;
pub mod summary;

pub use bt::{BaseVerdict, Design, Fit, FitError, FitOptions, Prior};
pub use laplace::Posterior;
