//! Bucket placement and rendering tests for [`Histogram`].

use super::*;

#[test]
fn observations_land_in_the_right_buckets_and_render_cumulatively() {
    let h = Histogram::new(&[1, 5, 10]);
    for v in [0, 1, 3, 5, 11] {
        h.observe(v);
    }
    let mut out = String::new();
    h.render(&mut out, "m", "service=\"s\"");
    assert_eq!(
        out,
        "m_bucket{service=\"s\",le=\"1\"} 2\n\
         m_bucket{service=\"s\",le=\"5\"} 4\n\
         m_bucket{service=\"s\",le=\"10\"} 4\n\
         m_bucket{service=\"s\",le=\"+Inf\"} 5\n\
         m_count{service=\"s\"} 5\n\
         m_sum{service=\"s\"} 20\n"
    );
}
