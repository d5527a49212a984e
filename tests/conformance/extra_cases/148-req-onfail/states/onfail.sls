good:
  test.succeed_without_changes: []
bad:
  test.fail_without_changes: []
bad2:
  test.fail_with_changes: []

onfail_plain_mixed:
  test.succeed_with_changes:
    - onfail:
      - test: good
      - test: bad

onfail_plain_good:
  test.succeed_with_changes:
    - onfail:
      - test: good

onfail_any_mixed:
  test.succeed_with_changes:
    - onfail_any:
      - test: good
      - test: bad

onfail_all_mixed:
  test.succeed_with_changes:
    - onfail_all:
      - test: good
      - test: bad

onfail_all_bad:
  test.succeed_with_changes:
    - onfail_all:
      - test: bad
      - test: bad2

pusher_fail:
  test.fail_without_changes:
    - onfail_in:
      - test: pushed_handler

pushed_handler:
  test.succeed_with_changes: []
