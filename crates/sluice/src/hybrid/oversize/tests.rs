use super::*;

fn frame(code: CloseCode, reason: &str) -> Option<CloseFrame> {
    Some(CloseFrame {
        code,
        reason: reason.to_string().into(),
    })
}

#[test]
fn a_normal_going_away_or_silent_close_is_no_error() {
    assert!(closed("data plane", None).is_ok());
    assert!(closed("data plane", frame(CloseCode::Normal, "bye")).is_ok());
    assert!(closed("data plane", frame(CloseCode::Away, "shutting down")).is_ok());
}

#[test]
fn a_close_for_size_is_oversized_and_says_why() {
    let reason = "configuration over the data plane's cluster_max_payload of 1000 bytes";
    let err = closed("data plane", frame(CloseCode::Size, reason)).unwrap_err();
    assert!(err.is::<Oversized>());
    assert_eq!(
        err.to_string(),
        format!("the data plane closed the link (1009): {reason}")
    );
}

#[test]
fn another_close_is_an_error_with_its_code() {
    let err = closed("control plane", frame(CloseCode::Policy, "not allowed")).unwrap_err();
    assert!(!err.is::<Oversized>());
    assert_eq!(
        err.to_string(),
        "the control plane closed the link (1008): not allowed"
    );
}
