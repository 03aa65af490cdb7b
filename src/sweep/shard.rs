//! Which shard of a sweep this process runs: `--shard K/N`, or K (and N) from the array
//! variables of the scheduler that started it (docs/cli.md, "Shards"). Shard K of N runs the
//! points whose index mod N is K.

use std::ffi::OsString;

/// Shard `k` of `n` (0 <= k < n).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    pub k: u32,
    pub n: u32,
}

impl Shard {
    /// Whether point `index` is this shard's.
    pub fn has(self, index: u64) -> bool {
        index % u64::from(self.n) == u64::from(self.k)
    }

    /// This shard's points of a grid of `points`, in index order.
    pub fn indices(self, points: u64) -> impl Iterator<Item = u64> {
        (u64::from(self.k)..points).step_by(self.n as usize)
    }

    /// How many of `points` are this shard's.
    pub fn count(self, points: u64) -> u64 {
        points
            .saturating_sub(u64::from(self.k))
            .div_ceil(u64::from(self.n))
    }
}

/// The variables that carry a shard's index, and which scheduler sets them.
const INDEX_VARS: [(&str, &str); 3] = [
    ("JOB_COMPLETION_INDEX", "a Kubernetes Indexed Job"),
    (
        "HQ_TASK_ID",
        "a HyperQueue task array, ids from 0: `hq submit --array 0-{last}`",
    ),
    ("SLURM_ARRAY_TASK_ID", "a Slurm job array"),
];

/// The shard to run and where it came from (for a note on stderr), or `None` for the whole
/// sweep; `env` reads a variable. A variable that is not a number (or not even UTF-8: set, so
/// not "unset"), a K not below N, or two variables that disagree are errors naming them.
pub fn resolve(
    shard: Option<(u32, u32)>,
    shards: Option<u32>,
    env: &dyn Fn(&str) -> Option<OsString>,
) -> Result<Option<(Shard, String)>, String> {
    if let Some((k, n)) = shard {
        return Ok(Some((Shard { k, n }, format!("--shard {k}/{n}"))));
    }
    let number = |var: &str| -> Result<Option<u32>, String> {
        let Some(raw) = env(var) else {
            return Ok(None);
        };
        let text = raw.to_str().ok_or_else(|| {
            format!(
                "{var} is set, but not to UTF-8 text ({:?}): a shard index is a whole number; \
                 unset it or set it to the shard's index",
                raw
            )
        })?;
        text.trim().parse::<u32>().map(Some).map_err(|_| {
            format!("{var}=`{text}` is not a shard index: the variable must hold a whole number")
        })
    };
    // Slurm's array ids need not start at 0 (`--array=1-8`): count from the first
    let slurm = || -> Result<Option<u32>, String> {
        let Some(id) = number("SLURM_ARRAY_TASK_ID")? else {
            return Ok(None);
        };
        let min = number("SLURM_ARRAY_TASK_MIN")?.unwrap_or(0);
        id.checked_sub(min)
            .map(Some)
            .ok_or_else(|| format!("SLURM_ARRAY_TASK_ID={id} is below SLURM_ARRAY_TASK_MIN={min}"))
    };
    let Some(n) = shards else {
        let Some(k) = slurm()? else {
            return Ok(None);
        };
        let n = number("SLURM_ARRAY_TASK_COUNT")?.ok_or(
            "SLURM_ARRAY_TASK_ID is set but SLURM_ARRAY_TASK_COUNT is not: give the number of \
             shards with --shards N (or choose the shard with --shard K/N)",
        )?;
        return checked(k, n, "SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT")
            .map(|s| Some((s, format!("SLURM_ARRAY_TASK_ID, shard {k}/{n}"))));
    };
    let mut found: Vec<(&str, u32)> = Vec::new();
    for (var, _) in INDEX_VARS {
        let k = if var == "SLURM_ARRAY_TASK_ID" {
            slurm()?
        } else {
            number(var)?
        };
        if let Some(k) = k {
            found.push((var, k));
        }
    }
    if let (Some(count), true) = (
        number("SLURM_ARRAY_TASK_COUNT")?,
        found.iter().any(|(v, _)| *v == "SLURM_ARRAY_TASK_ID"),
    ) {
        if count != n {
            return Err(format!(
                "--shards {n}, but SLURM_ARRAY_TASK_COUNT={count}: the job array has {count} tasks"
            ));
        }
    }
    let Some(&(var, k)) = found.first() else {
        let vars: Vec<String> = INDEX_VARS
            .iter()
            .map(|(v, who)| format!("{v} ({})", who.replace("{last}", "N-1")))
            .collect();
        return Err(format!(
            "--shards {n} takes the shard's index from the scheduler, but none of {} is set; \
             choose a shard by hand with --shard K/{n}",
            vars.join(", ")
        ));
    };
    if let Some((other, k2)) = found.iter().find(|(_, k2)| *k2 != k) {
        return Err(format!(
            "{var}={k} and {other}={k2} disagree on the shard's index; unset one, or choose the \
             shard with --shard K/{n}"
        ));
    }
    checked(k, n, var, &format!("--shards {n}")).map(|s| Some((s, format!("{var}, shard {k}/{n}"))))
}

/// Shard `k` of `n`, or why `k` (from `var`) is not below `n` (from `of`).
fn checked(k: u32, n: u32, var: &str, of: &str) -> Result<Shard, String> {
    if n == 0 {
        return Err(format!("{of} is 0: a sweep has at least one shard"));
    }
    if k >= n {
        let how = INDEX_VARS
            .iter()
            .find(|(v, _)| *v == var)
            .map(|(_, who)| who.replace("{last}", &(n - 1).to_string()))
            .unwrap_or_default();
        return Err(format!(
            "{var}={k} is not below {of}: shard indices run from 0 to {} ({how})",
            n - 1
        ));
    }
    Ok(Shard { k, n })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<OsString> + 'a {
        move |name| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| OsString::from(v))
        }
    }

    #[test]
    fn a_variable_that_is_not_utf8_is_an_error_not_unset() {
        use std::os::unix::ffi::OsStringExt;
        // 0xff is never UTF-8: "1" followed by it
        let bad = |name: &str| (name == "HQ_TASK_ID").then(|| OsString::from_vec(vec![b'1', 0xff]));
        let e = resolve(None, Some(3), &bad).unwrap_err();
        assert!(
            e.starts_with("HQ_TASK_ID is set, but not to UTF-8 text"),
            "{e}"
        );
        let slurm = |name: &str| match name {
            "SLURM_ARRAY_TASK_ID" => Some(OsString::from("1")),
            "SLURM_ARRAY_TASK_COUNT" => Some(OsString::from_vec(vec![0xfe])),
            _ => None,
        };
        let e = resolve(None, None, &slurm).unwrap_err();
        assert!(
            e.starts_with("SLURM_ARRAY_TASK_COUNT is set, but not"),
            "{e}"
        );
    }

    fn shard(k: u32, n: u32) -> Shard {
        Shard { k, n }
    }

    #[test]
    fn points_go_round_robin() {
        let s = shard(1, 3);
        assert_eq!(s.indices(8).collect::<Vec<_>>(), [1, 4, 7]);
        assert_eq!(s.count(8), 3);
        assert!(s.has(4) && !s.has(5));
        assert_eq!(shard(5, 8).count(3), 0);
        assert_eq!(shard(5, 8).indices(3).count(), 0);
        assert_eq!(shard(0, 1).count(0), 0);
    }

    #[test]
    fn the_flag_wins_and_nothing_means_the_whole_sweep() {
        let env = with(&[
            ("SLURM_ARRAY_TASK_ID", "3"),
            ("SLURM_ARRAY_TASK_COUNT", "4"),
        ]);
        assert_eq!(
            resolve(Some((1, 2)), None, &env).unwrap().unwrap().0,
            shard(1, 2)
        );
        assert_eq!(resolve(None, None, &with(&[])).unwrap(), None);
        // HyperQueue and Kubernetes give no count: without --shards they are not a shard
        assert_eq!(
            resolve(None, None, &with(&[("HQ_TASK_ID", "1")])).unwrap(),
            None
        );
    }

    #[test]
    fn slurm_gives_both_and_counts_from_its_first_id() {
        let env = with(&[
            ("SLURM_ARRAY_TASK_ID", "3"),
            ("SLURM_ARRAY_TASK_COUNT", "4"),
        ]);
        assert_eq!(resolve(None, None, &env).unwrap().unwrap().0, shard(3, 4));
        let from_one = with(&[
            ("SLURM_ARRAY_TASK_ID", "8"),
            ("SLURM_ARRAY_TASK_MIN", "1"),
            ("SLURM_ARRAY_TASK_COUNT", "8"),
        ]);
        assert_eq!(
            resolve(None, None, &from_one).unwrap().unwrap().0,
            shard(7, 8)
        );
        let no_count = with(&[("SLURM_ARRAY_TASK_ID", "3")]);
        assert!(resolve(None, None, &no_count)
            .unwrap_err()
            .contains("SLURM_ARRAY_TASK_COUNT is not"));
        assert_eq!(
            resolve(None, Some(4), &no_count).unwrap().unwrap().0,
            shard(3, 4)
        );
        assert!(resolve(None, Some(5), &env)
            .unwrap_err()
            .contains("has 4 tasks"));
    }

    #[test]
    fn kubernetes_and_hyperqueue_need_the_count() {
        let k8s = with(&[("JOB_COMPLETION_INDEX", "2")]);
        assert_eq!(
            resolve(None, Some(3), &k8s).unwrap().unwrap().0,
            shard(2, 3)
        );
        let hq = with(&[("HQ_TASK_ID", "0")]);
        let (s, from) = resolve(None, Some(3), &hq).unwrap().unwrap();
        assert_eq!((s, from.as_str()), (shard(0, 3), "HQ_TASK_ID, shard 0/3"));
        let e = resolve(None, Some(3), &with(&[])).unwrap_err();
        assert!(
            e.contains("JOB_COMPLETION_INDEX") && e.contains("HQ_TASK_ID"),
            "{e}"
        );
    }

    #[test]
    fn bad_values_are_named() {
        let e = resolve(None, Some(3), &with(&[("HQ_TASK_ID", "3")])).unwrap_err();
        assert!(e.contains("HQ_TASK_ID=3 is not below --shards 3"), "{e}");
        assert!(e.contains("--array 0-2"), "{e}");
        let e = resolve(None, Some(3), &with(&[("JOB_COMPLETION_INDEX", "x1")])).unwrap_err();
        assert!(
            e.contains("JOB_COMPLETION_INDEX=`x1` is not a shard index"),
            "{e}"
        );
        let e = resolve(None, Some(3), &with(&[("HQ_TASK_ID", "-1")])).unwrap_err();
        assert!(e.contains("not a shard index"), "{e}");
        let both = with(&[("JOB_COMPLETION_INDEX", "1"), ("HQ_TASK_ID", "2")]);
        assert!(resolve(None, Some(3), &both)
            .unwrap_err()
            .contains("disagree"));
        let agree = with(&[("JOB_COMPLETION_INDEX", "1"), ("HQ_TASK_ID", "1")]);
        assert_eq!(
            resolve(None, Some(3), &agree).unwrap().unwrap().0,
            shard(1, 3)
        );
        let e = resolve(
            None,
            None,
            &with(&[
                ("SLURM_ARRAY_TASK_ID", "4"),
                ("SLURM_ARRAY_TASK_COUNT", "4"),
            ]),
        )
        .unwrap_err();
        assert!(
            e.contains("SLURM_ARRAY_TASK_ID=4 is not below SLURM_ARRAY_TASK_COUNT"),
            "{e}"
        );
    }
}
