// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

/// Keyless deposit addresses and batched payouts for one deployment per network.
///
/// A deposit address is the CREATE2 address, from this contract, of a fixed 45-byte init code
/// (`DEPOSIT_CODE_HASH`), with salt keccak256(abi.encode(destination, salt)): the destination (a
/// wallet's main address) is part of the derivation, so the address can only ever be emptied into
/// that destination. The address is a plain account any payer can pay. A sweep creates a contract
/// there whose constructor moves the named tokens to the destination and ends in SELFDESTRUCT to
/// the destination, which moves the native coin and, the account being created in the same
/// transaction (EIP-6780), deletes it: after the sweep the address has no code and nonce 0 again,
/// a native payment to it costs 21,000 gas, and a later sweep creates it anew.
///
/// Only the destination itself sweeps its deposits (`msg.sender` is the destination), so nobody
/// else can even name them: a third party can neither move the money nor create the contract.
///
/// Every token call is made with a low-level call whose outcome is checked, never assumed: a
/// token that reverts (paused, blacklisted), returns false or is not a contract fails alone and
/// is reported in an event; one that returns nothing (USDT) succeeds when its balance moved.
contract Sweeper {
    /// Most deposit addresses one `sweep` empties: bounds the call's gas well under a block.
    uint256 public constant SWEEP_BATCH_MAX = 100;
    /// Most items one `pay` pays.
    uint256 public constant PAYOUT_BATCH_MAX = 100;
    /// Gas a native payout's recipient may use: a smart-account wallet receives with a few
    /// thousand, and a recipient that burns gas fails its own item, not the whole batch.
    uint256 public constant PAYOUT_NATIVE_GAS = 100_000;

    /// The code each deposit's constructor runs, by DELEGATECALL, so in the deposit's own account.
    address public immutable DEPOSIT_LOGIC;
    /// keccak256 of the deposit's 45-byte init code (`_depositInitCode(DEPOSIT_LOGIC)`).
    bytes32 public immutable DEPOSIT_CODE_HASH;

    struct Payout {
        address token; // address(0): the native coin, paid from the call's value
        address to;
        uint256 amount;
    }

    /// `token` address(0) is the native coin; `amount` is what left the deposit.
    event Swept(address indexed destination, address indexed deposit, address indexed token, uint256 amount);
    /// `amount` is the balance that could not be moved (0 when the balance could not be read).
    event SweepFailed(address indexed destination, address indexed deposit, address indexed token, uint256 amount);
    /// The item at `index` of the `pay` call was paid. Its token, recipient and amount are the
    /// call's own (and, for a token, in the token's `Transfer`): repeated here they would cost
    /// every item of a batch about 1,000 gas more, for nothing the caller does not know.
    event Paid(address indexed payer, uint256 index);
    /// A refused item: its tokens never left the payer; its native amount is refunded to the payer.
    event PayoutFailed(address indexed payer, address indexed token, address indexed to, uint256 index, uint256 amount);

    error BatchTooLarge();
    error Reentered();
    error ValueMismatch();
    error RefundFailed();
    /// A deposit's creation failed: the address is taken (a salt twice in one call, or a network
    /// whose SELFDESTRUCT does not delete the account), or its constructor reverted (a network
    /// that disables SELFDESTRUCT, out of gas). The whole call reverts: nothing moved.
    error DeployFailed();
    /// `sweepOrder` and `sweepOutcome` answer only the deposit being created.
    error NotDeposit();

    uint256 private constant IDLE = 1;
    uint256 private constant PAYING = 2;
    /// IDLE, PAYING, or while a `sweep` runs the address of the deposit being created: the lock
    /// `sweep` and `pay` share, and the one caller `sweepOrder` and `sweepOutcome` answer.
    uint256 private _lock = IDLE;
    /// The order of the last `sweep`: its destination (low 160 bits) and its number of tokens
    /// (above), the tokens in `_tokenAt[0 …]`. Left in place after the call, not cleared: a slot
    /// set back to zero refunds most of its cost, but refunds are capped at a fifth of the
    /// transaction's gas, so a small sweep would pay nearly all of it; a slot kept nonzero costs
    /// 5,000 to change and 2,200 to write again with the same value (the same wallet's next sweep).
    /// Read only by the deposit being created, so what stays there is never acted on.
    uint256 private _order;
    mapping(uint256 => address) private _tokenAt;
    /// Token slots the constructor makes nonzero: a batch naming up to this many tokens, the
    /// first one on this deployment included, changes used slots only (5,000 gas each) and never
    /// pays a first write (22,100), which the deployment pays once instead of a wallet's payments.
    uint256 private constant PRIMED_TOKEN_SLOTS = 4;

    modifier nonReentrant() {
        if (_lock != IDLE) revert Reentered();
        _lock = PAYING;
        _;
        _lock = IDLE;
    }

    constructor() {
        address logic = address(new DepositLogic());
        DEPOSIT_LOGIC = logic;
        DEPOSIT_CODE_HASH = keccak256(_depositInitCode(logic));
        // Placeholders, never read: every `sweep` writes its own order before any deposit reads it.
        _order = 1;
        for (uint256 j = 0; j < PRIMED_TOKEN_SLOTS; ++j) {
            _tokenAt[j] = address(1);
        }
    }

    /// The deposit address of `salt` (one per charge) bound to `destination`.
    function depositAddress(address destination, bytes32 salt) public view returns (address) {
        return _create2Address(_create2Salt(destination, salt));
    }

    /// Empties the caller's deposit addresses of `salts` into the caller: each token of `tokens`
    /// (whole balance), then the native coin. A refused token fails alone (`SweepFailed`). The
    /// salts of one call must be distinct: an address swept twice in one transaction is not yet
    /// deleted the second time, and the call reverts (`DeployFailed`).
    function sweep(bytes32[] calldata salts, address[] calldata tokens) external {
        if (_lock != IDLE) revert Reentered();
        if (salts.length > SWEEP_BATCH_MAX) revert BatchTooLarge();
        _order = uint256(uint160(msg.sender)) | (tokens.length << 160);
        for (uint256 j = 0; j < tokens.length; ++j) {
            _tokenAt[j] = tokens[j];
        }
        bytes memory code = _depositInitCode(DEPOSIT_LOGIC);
        bytes32 codeHash = DEPOSIT_CODE_HASH;
        bytes4 deployFailed = DeployFailed.selector;
        assembly ("memory-safe") {
            // The CREATE2 preimage 0xff ++ this ++ salt ++ code hash, at `pre` + 11 (85 bytes).
            let pre := mload(0x40)
            mstore(pre, or(shl(160, 0xff), address()))
            mstore(add(pre, 0x40), codeHash)
            for {
                let i := 0
            } lt(i, salts.length) {
                i := add(i, 1)
            } {
                // salt keccak256(abi.encode(destination, salt)), as `_create2Salt`
                mstore(0, caller())
                mstore(0x20, calldataload(add(salts.offset, shl(5, i))))
                let create2Salt := keccak256(0, 0x40)
                mstore(add(pre, 0x20), create2Salt)
                let deposit := and(keccak256(add(pre, 11), 85), 0xffffffffffffffffffffffffffffffffffffffff)
                sstore(_lock.slot, deposit)
                // CREATE2 lands exactly on the derived address or fails; either way a deposit that
                // could not be created stops the whole call rather than being skipped unseen.
                if iszero(eq(create2(0, add(code, 0x20), mload(code), create2Salt), deposit)) {
                    mstore(0, deployFailed)
                    revert(0, 4)
                }
            }
        }
        _lock = IDLE;
    }

    /// For the deposit being created: where its funds go, and which tokens to move.
    function sweepOrder() external view returns (address, address[] memory) {
        if (msg.sender != address(uint160(_lock))) revert NotDeposit();
        uint256 order = _order;
        // abi.encode(destination, tokens), written straight from storage.
        assembly ("memory-safe") {
            let count := shr(160, order)
            let out := mload(0x40)
            mstore(out, and(order, 0xffffffffffffffffffffffffffffffffffffffff))
            mstore(add(out, 0x20), 0x40)
            mstore(add(out, 0x40), count)
            mstore(0x20, _tokenAt.slot)
            for {
                let j := 0
            } lt(j, count) {
                j := add(j, 1)
            } {
                mstore(0, j)
                mstore(add(out, add(0x60, shl(5, j))), sload(keccak256(0, 0x40)))
            }
            return(out, add(0x60, shl(5, count)))
        }
    }

    /// For the deposit being created: reports one move out of it (the native coin: `token`
    /// address(0)). `moved`: `Swept` with `amount` what left; else `SweepFailed` with `amount` the
    /// balance that stayed.
    function sweepOutcome(address token, bool moved, uint256 amount) external {
        if (msg.sender != address(uint160(_lock))) revert NotDeposit();
        address destination = address(uint160(_order));
        bytes32 topic = moved ? Swept.selector : SweepFailed.selector;
        assembly ("memory-safe") {
            mstore(0, amount)
            log4(0, 0x20, topic, destination, caller(), token)
        }
    }

    /// Pays each item from the caller: tokens by `transferFrom(caller, to, amount)` (the caller
    /// approved this contract), the native coin from the call's value, which must be exactly the
    /// native items' sum. A refused item fails alone (`PayoutFailed`); the native amount of the
    /// refused items goes back to the caller. Nothing stays in this contract.
    function pay(Payout[] calldata items) external payable nonReentrant {
        if (items.length > PAYOUT_BATCH_MAX) revert BatchTooLarge();
        uint256 nativeLeft = msg.value;
        uint256 refund = 0;
        for (uint256 i = 0; i < items.length; ++i) {
            Payout calldata item = items[i];
            bool ok;
            if (item.token == address(0)) {
                if (item.amount > nativeLeft) revert ValueMismatch();
                nativeLeft -= item.amount;
                ok = _payable(item.to) && _sendNative(item.to, item.amount, PAYOUT_NATIVE_GAS);
                if (!ok) refund += item.amount;
            } else {
                ok = _payable(item.to) && _safeTransferFrom(item.token, msg.sender, item.to, item.amount);
            }
            if (ok) emit Paid(msg.sender, i);
            else emit PayoutFailed(msg.sender, item.token, item.to, i, item.amount);
        }
        if (nativeLeft != 0) revert ValueMismatch();
        if (refund != 0 && !_sendNative(msg.sender, refund, gasleft())) revert RefundFailed();
    }

    /// A payout to no one, or to this contract (which would keep it), is refused.
    function _payable(address to) private view returns (bool) {
        return to != address(0) && to != address(this);
    }

    function _create2Salt(address destination, bytes32 salt) private pure returns (bytes32) {
        return keccak256(abi.encode(destination, salt));
    }

    function _create2Address(bytes32 create2Salt) private view returns (address deposit) {
        bytes32 codeHash = DEPOSIT_CODE_HASH;
        assembly ("memory-safe") {
            let ptr := mload(0x40)
            mstore(ptr, or(shl(160, 0xff), address()))
            mstore(add(ptr, 0x20), create2Salt)
            mstore(add(ptr, 0x40), codeHash)
            deposit := and(keccak256(add(ptr, 11), 85), 0xffffffffffffffffffffffffffffffffffffffff)
        }
    }

    /// A deposit's init code, 45 bytes: DELEGATECALL `logic` (no calldata, 32 bytes back: the
    /// destination), revert with its answer if it reverted, else SELFDESTRUCT(destination), which
    /// moves the native coin and returns no code. Written as bytes because the one opcode solc
    /// warns about is the point of it:
    ///   PUSH1 32  RETURNDATASIZE×3 (zeros)  PUSH20 logic  GAS  DELEGATECALL
    ///   PUSH1 0x28  JUMPI
    ///   RETURNDATASIZE  PUSH1 0  DUP1  RETURNDATACOPY  RETURNDATASIZE  PUSH1 0  REVERT
    ///   0x28: JUMPDEST  PUSH1 0  MLOAD  SELFDESTRUCT
    function _depositInitCode(address logic) private pure returns (bytes memory) {
        return abi.encodePacked(hex"60203d3d3d73", logic, hex"5af46028573d6000803e3d6000fd5b600051ff");
    }
}

/// The code every deposit's constructor runs by DELEGATECALL, so as the deposit address itself,
/// with the Sweeper as `msg.sender`. It takes its orders from the Sweeper, which answers only the
/// deposit it is creating (so a direct call here, or from any other account, moves nothing), and
/// reports its moves back to the Sweeper, which emits them. Written in assembly: it runs once per
/// address swept, every time.
contract DepositLogic {
    /// The Sweeper that deployed this contract.
    address private immutable SWEEPER;

    constructor() {
        SWEEPER = msg.sender;
    }

    /// For each ordered token: reads the balance, transfers it all to the destination, reads the
    /// balance again, and reports the outcome to the Sweeper (`_callToken`'s rules; moved =
    /// transfer accepted and the balance went down, by `amount`; refused: `amount` is the balance
    /// that stayed, 0 when it could not be read; a zero balance reports nothing). Then reports the
    /// native balance, which the init code's SELFDESTRUCT moves, and answers the destination
    /// (32 bytes) for it.
    fallback() external {
        address sweeper = SWEEPER;
        bytes4 orderSelector = Sweeper.sweepOrder.selector;
        bytes4 outcomeSelector = Sweeper.sweepOutcome.selector;
        assembly {
            function forward() {
                returndatacopy(0, 0, returndatasize())
                revert(0, returndatasize())
            }
            // The order, abi.encode(destination, tokens): destination, offset, count, tokens…
            mstore(0, orderSelector)
            if iszero(staticcall(gas(), sweeper, 0, 4, 0, 0)) {
                forward()
            }
            let order := mload(0x40)
            returndatacopy(order, 0, returndatasize())
            let destination := mload(order)
            let count := mload(add(order, 0x40))
            let tokens := add(order, 0x60)
            // One buffer, after the order, for each call in turn (at most 4 + 3 × 32 bytes).
            let buf := add(tokens, shl(5, count))
            for {
                let j := 0
            } lt(j, count) {
                j := add(j, 1)
            } {
                let token := mload(add(tokens, shl(5, j)))
                let amount := 0
                let moved := 0
                // balanceOf(this): at most 32 bytes of the answer are copied. (Yul evaluates
                // arguments right to left: each call goes first, on its own.)
                mstore(buf, 0x70a0823100000000000000000000000000000000000000000000000000000000)
                mstore(add(buf, 4), address())
                let ok := staticcall(gas(), token, buf, 0x24, 0, 0x20)
                if and(ok, gt(returndatasize(), 0x1f)) {
                    amount := mload(0)
                    // None held: nothing to move or report.
                    if iszero(amount) {
                        continue
                    }
                    // transfer(destination, amount): a call that did not revert and answered
                    // true, or nothing from an address with code.
                    mstore(buf, 0xa9059cbb00000000000000000000000000000000000000000000000000000000)
                    mstore(add(buf, 4), destination)
                    mstore(add(buf, 0x24), amount)
                    mstore(0, 0)
                    ok := call(gas(), token, 0, buf, 0x44, 0, 0x20)
                    switch returndatasize()
                    case 0 {
                        ok := and(ok, gt(extcodesize(token), 0))
                    }
                    default {
                        ok := and(ok, and(gt(returndatasize(), 0x1f), eq(mload(0), 1)))
                    }
                    // Moved: the balance, read again, went down; what left is the amount.
                    if ok {
                        mstore(buf, 0x70a0823100000000000000000000000000000000000000000000000000000000)
                        mstore(add(buf, 4), address())
                        ok := staticcall(gas(), token, buf, 0x24, 0, 0x20)
                        if and(ok, gt(returndatasize(), 0x1f)) {
                            let left := mload(0)
                            if lt(left, amount) {
                                moved := 1
                                amount := sub(amount, left)
                            }
                        }
                    }
                }
                // sweepOutcome(token, moved, amount)
                mstore(buf, outcomeSelector)
                mstore(add(buf, 4), token)
                mstore(add(buf, 0x24), moved)
                mstore(add(buf, 0x44), amount)
                if iszero(call(gas(), sweeper, 0, buf, 0x64, 0, 0)) {
                    forward()
                }
            }
            // The native coin: all of it leaves with the SELFDESTRUCT that follows, which cannot fail.
            let native := selfbalance()
            if native {
                mstore(buf, outcomeSelector)
                mstore(add(buf, 4), 0)
                mstore(add(buf, 0x24), 1)
                mstore(add(buf, 0x44), native)
                if iszero(call(gas(), sweeper, 0, buf, 0x64, 0, 0)) {
                    forward()
                }
            }
            mstore(0, destination)
            return(0, 0x20)
        }
    }
}

/// Calls an ERC-20 the way USDT-like tokens need: success is a call that did not revert and either
/// returned true or returned nothing from an address that has code. At most 32 bytes of the answer
/// are read, so an answer of any size costs the caller nothing to copy.
function _callToken(address token, bytes memory data) returns (bool ok) {
    assembly ("memory-safe") {
        mstore(0, 0)
        ok := call(gas(), token, 0, add(data, 0x20), mload(data), 0, 0x20)
        switch returndatasize()
        case 0 {
            ok := and(ok, gt(extcodesize(token), 0))
        }
        default {
            ok := and(ok, and(gt(returndatasize(), 0x1f), eq(mload(0), 1)))
        }
    }
}

function _safeTransferFrom(address token, address from, address to, uint256 amount) returns (bool) {
    return _callToken(token, abi.encodeWithSelector(0x23b872dd, from, to, amount));
}

/// Sends native coin with at most `gasLimit` gas, copying none of the recipient's answer.
function _sendNative(address to, uint256 amount, uint256 gasLimit) returns (bool ok) {
    assembly ("memory-safe") {
        ok := call(gasLimit, to, amount, 0, 0, 0, 0)
    }
}
