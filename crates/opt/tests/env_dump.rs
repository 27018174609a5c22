//! `TRIDENT_DUMP_IR=1` turns on dumps. In its own test binary: it sets a process-wide variable.

use trident_opt::PassManager;

#[test]
fn trident_dump_ir_turns_on_dumps() {
    std::env::set_var("TRIDENT_DUMP_IR", "1");
    assert!(PassManager::new().print_ir_after_all);
    std::env::set_var("TRIDENT_DUMP_IR", "0");
    assert!(!PassManager::new().print_ir_after_all);
    std::env::remove_var("TRIDENT_DUMP_IR");
    assert!(!PassManager::new().print_ir_after_all);
}
