//! Signature generation for the parameter-passing checks (filled in next).
