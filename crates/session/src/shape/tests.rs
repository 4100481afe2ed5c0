use super::*;

fn secs(n: u64) -> Option<Dur> {
    Some(Dur::from_secs(n))
}

#[test]
fn one_lone_parameter_adjusts_a_file_s_model_and_a_complete_shape_replaces_it() {
    let lone = ShapeFlags {
        vus: Some(5),
        ..ShapeFlags::default()
    };
    assert_eq!(
        load_shape(&lone, true).unwrap(),
        Some(LoadShape::Adjust {
            vus: Some(5),
            duration: None,
            rate: None
        })
    );
    // Not lone: two parameters are a whole shape.
    let both = ShapeFlags {
        rate: Some(7.0),
        duration: secs(3),
        ..ShapeFlags::default()
    };
    assert_eq!(
        load_shape(&both, true).unwrap(),
        Some(LoadShape::Rate {
            rate: 7.0,
            duration: Dur::from_secs(3)
        })
    );
    // Lone, but with --iterations: not an adjustment.
    let with_iterations = ShapeFlags {
        vus: Some(2),
        iterations: Some(3),
        ..ShapeFlags::default()
    };
    assert_eq!(
        load_shape(&with_iterations, true).unwrap(),
        Some(LoadShape::Iterations {
            vus: 2,
            iterations: 3
        })
    );
    assert_eq!(load_shape(&ShapeFlags::default(), true).unwrap(), None);
}

#[test]
fn quick_mode_fills_the_shape_with_ten_vus_for_ten_seconds() {
    let lone = ShapeFlags {
        vus: Some(4),
        ..ShapeFlags::default()
    };
    assert_eq!(
        load_shape(&lone, false).unwrap(),
        Some(LoadShape::Vus {
            vus: 4,
            duration: Dur::from_secs(10)
        })
    );
    let duration = ShapeFlags {
        duration: secs(2),
        ..ShapeFlags::default()
    };
    assert_eq!(
        load_shape(&duration, false).unwrap(),
        Some(LoadShape::Vus {
            vus: 10,
            duration: Dur::from_secs(2)
        })
    );
    let stages = ShapeFlags {
        stages: Some("1s:5,1s:0"),
        ..ShapeFlags::default()
    };
    assert!(matches!(
        load_shape(&stages, false).unwrap(),
        Some(LoadShape::Stages(s)) if s.len() == 2
    ));
}

#[test]
fn impossible_shapes_are_refused_naming_their_flag() {
    let error = |f: ShapeFlags<'_>| load_shape(&f, false).unwrap_err().to_string();
    assert_eq!(
        error(ShapeFlags {
            rate: Some(0.0),
            ..ShapeFlags::default()
        }),
        "--rate 0: must be more than 0"
    );
    assert_eq!(
        error(ShapeFlags {
            vus: Some(0),
            ..ShapeFlags::default()
        }),
        "--vus: must be at least 1"
    );
    assert_eq!(
        error(ShapeFlags {
            stages: Some("1s:5"),
            duration: secs(3),
            ..ShapeFlags::default()
        }),
        "--duration does not go with --stages: the stages set the length"
    );
    assert!(error(ShapeFlags {
        stages: Some("nonsense"),
        ..ShapeFlags::default()
    })
    .starts_with("--stages: "));
    assert_eq!(
        error(ShapeFlags {
            iterations: Some(0),
            ..ShapeFlags::default()
        }),
        "--iterations: must be at least 1"
    );
    // A rate makes --stages irrelevant, as it always did: the rate wins.
    let f = ShapeFlags {
        rate: Some(5.0),
        stages: Some("nonsense"),
        ..ShapeFlags::default()
    };
    assert!(matches!(
        load_shape(&f, false).unwrap(),
        Some(LoadShape::Rate { .. })
    ));
}
