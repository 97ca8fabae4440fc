package queue

import "testing"

func TestMedium(t *testing.T) {
	for _, tc := range []struct {
		name      string
		deferrals int
		last, tip string
		want      MediumAction
	}{
		{"first conflict", 0, "", "t1", MediumRebase},
		{"target moved since", 1, "t1", "t2", MediumRebase},
		{"third retry on a new tip", 2, "t2", "t3", MediumRebase},
		{"target did not move", 1, "t1", "t1", MediumEscalate},
		{"spent", MaxDeferrals, "t3", "t4", MediumEscalate},
		{"beyond", MaxDeferrals + 2, "t3", "t9", MediumEscalate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			it := item("a", StatusConflict, 2, 1)
			it.Deferrals, it.ConflictTip = tc.deferrals, tc.last
			if got := Medium(it, tc.tip); got != tc.want {
				t.Errorf("Medium = %v, want %v", got, tc.want)
			}
		})
	}
	// Three deferrals on moving tips, then escalation.
	it := item("a", StatusConflict, 2, 1)
	for i, tip := range []string{"t1", "t2", "t3"} {
		if Medium(it, tip) != MediumRebase {
			t.Fatalf("conflict %d escalated", i+1)
		}
		if err := Defer(it, tip, uint64(10+i)); err != nil {
			t.Fatal(err)
		}
		if it.Status != StatusPending || it.Seq != uint64(10+i) || it.ConflictTip != tip || it.Deferrals != i+1 {
			t.Fatalf("after Defer %d: %+v", i+1, it)
		}
		if err := Check(StatusConflict, it.Status); err != nil {
			t.Fatal(err)
		}
		it.Status = StatusConflict // as the worker's next attempt finds it
	}
	if Medium(it, "t4") != MediumEscalate {
		t.Fatal("a fourth conflict was not escalated")
	}
	if err := Retry(it); err != nil || it.Deferrals != 0 || it.ConflictTip != "" {
		t.Fatalf("Retry keeps the medium tier spent: %v %+v", err, it)
	}
}

func TestRequeue(t *testing.T) {
	for _, s := range Statuses() {
		for _, files := range [][]string{nil, {"a.txt"}} {
			it := item("a", s, 2, 1)
			it.ConflictFiles = files
			it.Candidate, it.Tested, it.MergeRef, it.Retries, it.Deferrals, it.ConflictTip, it.Action = "c", true, "r", 3, 3, "t", "fix"
			want := s == StatusHeld || ((s == StatusWaitingHuman || s == StatusConflict) && files != nil)
			if got := Requeue(it); got != want {
				t.Errorf("Requeue(%s, files %v) = %v", s, files, got)
				continue
			}
			if !want {
				if it.Status != s || it.Candidate != "c" {
					t.Errorf("Requeue(%s) changed the item: %+v", s, it)
				}
				continue
			}
			if it.Status != StatusPending || it.Candidate != "" || it.Tested || it.Retries != 0 || it.Deferrals != 0 || it.ConflictTip != "" || it.Action != "" {
				t.Errorf("Requeue(%s): %+v", s, it)
			}
			if keeps := it.MergeRef == "r"; keeps != (s == StatusHeld) {
				t.Errorf("Requeue(%s): merge ref kept %v", s, keeps)
			}
			if err := Check(s, it.Status); err != nil {
				t.Errorf("Requeue makes a change the table refuses: %v", err)
			}
		}
	}
}
