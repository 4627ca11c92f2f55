// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

// Tokens that behave the ways real tokens do, for test/sweeper/sweeper.test.ts. Anyone can mint.

/// Balances, allowances, minting and the moves; each token below decides how it answers.
abstract contract BaseToken {
    mapping(address => uint256) public balanceOf;
    mapping(address => mapping(address => uint256)) public allowance;
    uint256 public totalSupply;
    uint8 public constant decimals = 18;

    event Transfer(address indexed from, address indexed to, uint256 value);
    event Approval(address indexed owner, address indexed spender, uint256 value);

    function mint(address to, uint256 amount) external {
        totalSupply += amount;
        balanceOf[to] += amount;
        emit Transfer(address(0), to, amount);
    }

    function approve(address spender, uint256 amount) external returns (bool) {
        allowance[msg.sender][spender] = amount;
        emit Approval(msg.sender, spender, amount);
        return true;
    }

    function _spend(address from, uint256 amount) internal {
        uint256 allowed = allowance[from][msg.sender];
        require(allowed >= amount, "allowance");
        if (allowed != type(uint256).max) allowance[from][msg.sender] = allowed - amount;
    }

    function _move(address from, address to, uint256 amount) internal virtual {
        require(to != address(0), "to zero");
        require(balanceOf[from] >= amount, "balance");
        balanceOf[from] -= amount;
        balanceOf[to] += amount;
        emit Transfer(from, to, amount);
    }
}

/// An ordinary token: moves and returns true.
contract PlainToken is BaseToken {
    function transfer(address to, uint256 amount) external returns (bool) {
        _move(msg.sender, to, amount);
        return true;
    }

    function transferFrom(address from, address to, uint256 amount) external returns (bool) {
        _spend(from, amount);
        _move(from, to, amount);
        return true;
    }
}

/// Reverts every move while paused, and any move from or to a blacklisted address (USDC, USDT).
contract RefusingToken is BaseToken {
    bool public paused;
    mapping(address => bool) public blacklisted;

    function setPaused(bool value) external {
        paused = value;
    }

    function setBlacklisted(address who, bool value) external {
        blacklisted[who] = value;
    }

    function transfer(address to, uint256 amount) external returns (bool) {
        _move(msg.sender, to, amount);
        return true;
    }

    function transferFrom(address from, address to, uint256 amount) external returns (bool) {
        _spend(from, amount);
        _move(from, to, amount);
        return true;
    }

    function _move(address from, address to, uint256 amount) internal override {
        require(!paused, "paused");
        require(!blacklisted[from] && !blacklisted[to], "blacklisted");
        super._move(from, to, amount);
    }
}

/// USDT's interface: transfer and transferFrom return nothing.
contract NoReturnToken is BaseToken {
    function transfer(address to, uint256 amount) external {
        _move(msg.sender, to, amount);
    }

    function transferFrom(address from, address to, uint256 amount) external {
        _spend(from, amount);
        _move(from, to, amount);
    }
}

/// Refuses by answering false, moving nothing (no revert).
contract FalseToken is BaseToken {
    function transfer(address, uint256) external pure returns (bool) {
        return false;
    }

    function transferFrom(address, address, uint256) external pure returns (bool) {
        return false;
    }
}

/// Answers true and moves nothing.
contract LyingToken is BaseToken {
    function transfer(address, uint256) external pure returns (bool) {
        return true;
    }

    function transferFrom(address, address, uint256) external pure returns (bool) {
        return true;
    }
}

/// Burns 1% of every move: the recipient gets 99% of what leaves the sender.
contract FeeToken is BaseToken {
    function transfer(address to, uint256 amount) external returns (bool) {
        _move(msg.sender, to, amount);
        return true;
    }

    function transferFrom(address from, address to, uint256 amount) external returns (bool) {
        _spend(from, amount);
        _move(from, to, amount);
        return true;
    }

    function _move(address from, address to, uint256 amount) internal override {
        uint256 fee = amount / 100;
        super._move(from, to, amount - fee);
        balanceOf[from] -= fee;
        totalSupply -= fee;
        emit Transfer(from, address(0), fee);
    }
}

interface ISweeper {
    struct Payout {
        address token;
        address to;
        uint256 amount;
    }

    function sweep(bytes32[] calldata salts, address[] calldata tokens) external;

    function pay(Payout[] calldata items) external payable;

    function sweepOrder() external view returns (address destination, address[] memory tokens);

    function sweepOutcome(address token, bool moved, uint256 amount) external;

    function DEPOSIT_LOGIC() external view returns (address);
}

/// On each transfer out it tries, before moving, to re-enter the Sweeper (sweep the same deposits
/// again, pay out), to ask for the sweep's orders and forge a report as if it were the deposit,
/// to run the deposits' logic itself, and to call the deposit being created (its caller, which has
/// no code yet); it records which attempts succeeded, then moves as asked.
contract ReentrantToken is BaseToken {
    address public sweeper;
    address payable public thief;
    bytes32[] private salts;
    address[] private tokens;
    /// Transfers out during which the attempts were made.
    uint256 public rounds;
    /// Attempts that did not revert (the call to the deposit being created aside, counted apart).
    uint256 public successes;
    /// Calls to the deposit being created that answered anything (it has no code: none should).
    uint256 public depositAnswers;

    function arm(address sweeper_, address payable thief_, bytes32[] calldata salts_, address[] calldata tokens_) external {
        sweeper = sweeper_;
        thief = thief_;
        salts = salts_;
        tokens = tokens_;
    }

    function transfer(address to, uint256 amount) external returns (bool) {
        if (sweeper != address(0)) _reenter(msg.sender);
        _move(msg.sender, to, amount);
        return true;
    }

    function transferFrom(address from, address to, uint256 amount) external returns (bool) {
        if (sweeper != address(0)) _reenter(msg.sender);
        _spend(from, amount);
        _move(from, to, amount);
        return true;
    }

    function _reenter(address caller) private {
        rounds += 1;
        ISweeper s = ISweeper(sweeper);
        try s.sweep(salts, tokens) {
            successes += 1;
        } catch {}
        try s.pay(new ISweeper.Payout[](0)) {
            successes += 1;
        } catch {}
        try s.sweepOrder() returns (address, address[] memory) {
            successes += 1;
        } catch {}
        try s.sweepOutcome(address(this), true, 1) {
            successes += 1;
        } catch {}
        (bool ran, ) = s.DEPOSIT_LOGIC().call("");
        if (ran) successes += 1;
        (bool called, bytes memory answer) = caller.call(abi.encodeWithSignature("withdraw(address)", thief));
        if (!called || answer.length != 0 || caller.code.length != 0) depositAnswers += 1;
    }
}

/// Accepts no native coin.
contract RejectingReceiver {
    receive() external payable {
        revert("no thanks");
    }
}
