//! pi's send-time rules (docs/contract.md §12): a call without a result gets
//! [`PI_NO_RESULT`] before the next turn; a reply stopped by an error or an abort is
//! left out.
/// pi's text for a call whose result never came.
pub(in crate::context) const PI_NO_RESULT: &str = "No result provided";
