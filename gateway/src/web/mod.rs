//! HTTP plumbing written once for every binding: authentication and problem documents.

pub mod auth;
pub mod problem;
